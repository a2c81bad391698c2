package peers_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/agent"
	"podnet.io/podnet/agent/peers"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/underlay"
	"podnet.io/podnet/test/testenv"
)

// tunnelRemotes is what the table lets send a point-to-point tunnel's VNI
// on port 4789 ("-": not locked).
func (r *recorder) tunnelRemotes(vni int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.table == nil {
		return "-"
	}
	for _, s := range r.table.Sets {
		if strings.HasPrefix(s.Name, fmt.Sprintf("from-tun-4789-%d-", vni)) {
			return fmt.Sprint(s.Addrs)
		}
	}
	return "-"
}

// TestIntegrationTunnelsLockedBesideSpans: a pod's point-to-point tunnel
// joins the node's table next to the spanning networks; a second pod's
// tunnel of the same port and VNI is refused, naming the holder, and the
// lock keeps only the first's remote; a tunnel of a spanning network's
// port and VNI is refused, naming the bridge, and a spanning bridge of a
// pod tunnel's port and VNI naming the pod; a node sync keeps the lock;
// once the first pod forgets its tunnel the second may have it.
func TestIntegrationTunnelsLockedBesideSpans(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	createNode(t, env.Client, "n1", "", "10.0.0.1")
	createNode(t, env.Client, "n2", "7", "10.0.0.2")
	skip := true
	mgr, err := manager.New(env.Config, manager.Options{Scheme: env.Scheme, Cache: agent.CacheOptions("n1"), Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: &skip}})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	w := &peers.Watch{NodeName: "n1", Dataplane: rec, Lock: rec, Resync: time.Hour}
	if err := w.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	testenv.RunManager(t, ctx, mgr)
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	rec.setDevice("pnbr-v4", &dataplane.SpanDevice{VNI: 7, Port: 4789})
	if err := w.Track(ctx, "pnbr-v4", peers.Span{VNI: 7, Port: 4789, Family: corev1.IPv4Protocol}); err != nil {
		t.Fatal(err)
	}
	tun := func(vni uint32, remote string) []underlay.Tunnel {
		return []underlay.Tunnel{underlay.PointToPoint(4789, vni, underlay.IPv4, []netip.Addr{netip.MustParseAddr(remote)})}
	}
	if err := w.TrackTunnels(ctx, "uid-a", "ta/a", tun(5001, "198.51.100.7")); err != nil {
		t.Fatal(err)
	}
	err = w.TrackTunnels(ctx, "uid-b", "tb/b", tun(5001, "198.51.100.8"))
	if err == nil || !strings.Contains(err.Error(), "vxlan port 4789 vni 5001") || !strings.Contains(err.Error(), `pod "ta/a"`) {
		t.Fatalf("a second pod's tunnel of one port and vni: %v", err)
	}
	if got := rec.tunnelRemotes(5001); got != "[198.51.100.7]" || rec.allowed(7) != "[10.0.0.2]" {
		t.Fatalf("tunnel 5001 locked to %s, span 7 to %s", got, rec.allowed(7))
	}
	if err := w.TrackTunnels(ctx, "uid-c", "tb/c", tun(7, "198.51.100.9")); err == nil || !strings.Contains(err.Error(), `spanning bridge "pnbr-v4"`) {
		t.Fatalf("a tunnel of a spanning network's port and vni: %v", err)
	}
	if got := rec.tunnelRemotes(7); got != "-" {
		t.Fatalf("a refused tunnel locked span 7's vni to %s", got)
	}
	if err := w.Track(ctx, "pnbr-x", peers.Span{VNI: 5001, Port: 4789, Family: corev1.IPv4Protocol}); err == nil || !strings.Contains(err.Error(), `pod "ta/a"`) {
		t.Fatalf("a spanning bridge of a pod tunnel's port and vni: %v", err)
	}
	if _, err := w.Reconcile(ctx, reconcile.Request{}); err != nil {
		t.Fatal(err)
	}
	if got := rec.tunnelRemotes(5001); got != "[198.51.100.7]" {
		t.Fatalf("after a node sync tunnel 5001 is locked to %s", got)
	}
	if err := w.TrackTunnels(ctx, "uid-a", "ta/a", nil); err != nil {
		t.Fatal(err)
	}
	if got := rec.tunnelRemotes(5001); got != "-" {
		t.Fatalf("after pod a forgot its tunnel, 5001 is locked to %s", got)
	}
	if err := w.TrackTunnels(ctx, "uid-b", "tb/b", tun(5001, "198.51.100.8")); err != nil {
		t.Fatal(err)
	}
	if got := rec.tunnelRemotes(5001); got != "[198.51.100.8]" || rec.allowed(7) != "[10.0.0.2]" {
		t.Fatalf("pod b's tunnel: 5001 locked to %s, span 7 to %s", got, rec.allowed(7))
	}
}

// restartedTable is a node table that held a pod's tunnel lock before the
// agent started.
type restartedTable struct {
	*recorder
	held []underlay.Tunnel
}

func (r restartedTable) PointToPointTunnels() ([]underlay.Tunnel, error) { return r.held, nil }

// TestIntegrationRestartKeepsTunnelLocks: a restarted agent's first
// table keeps the tunnel locks the node's table held, before it has seen
// their pods again; a lock no pod tracks again goes after a resync, one a
// pod tracks again stays.
func TestIntegrationRestartKeepsTunnelLocks(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	createNode(t, env.Client, "n1", "", "10.0.0.1")
	skip := true
	mgr, err := manager.New(env.Config, manager.Options{Scheme: env.Scheme, Cache: agent.CacheOptions("n1"), Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: &skip}})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	held := []underlay.Tunnel{
		underlay.PointToPoint(4789, 5001, underlay.IPv4, []netip.Addr{netip.MustParseAddr("198.51.100.7")}),
		underlay.PointToPoint(4789, 5002, underlay.IPv4, []netip.Addr{netip.MustParseAddr("198.51.100.9")}),
	}
	w := &peers.Watch{NodeName: "n1", Dataplane: rec, Lock: restartedTable{rec, held}, Resync: 2 * time.Second}
	if err := w.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	testenv.RunManager(t, ctx, mgr)
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	if _, err := w.Reconcile(ctx, reconcile.Request{}); err != nil {
		t.Fatal(err)
	}
	if a, b := rec.tunnelRemotes(5001), rec.tunnelRemotes(5002); a != "[198.51.100.7]" || b != "[198.51.100.9]" {
		t.Fatalf("first table after the restart: 5001 locked to %s, 5002 to %s", a, b)
	}
	// The pod of 5001 is seen again; the one of 5002 is gone.
	if err := w.TrackTunnels(ctx, "pod-a", "t/a", held[:1]); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for rec.tunnelRemotes(5002) != "-" {
		if time.Now().After(deadline) {
			t.Fatal("the lock of a tunnel no pod tracks never went")
		}
		time.Sleep(200 * time.Millisecond)
		if _, err := w.Reconcile(ctx, reconcile.Request{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := rec.tunnelRemotes(5001); got != "[198.51.100.7]" {
		t.Fatalf("the tracked tunnel lost its lock: %s", got)
	}
}
