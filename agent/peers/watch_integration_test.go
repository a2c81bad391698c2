package peers_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"podnet.io/podnet/agent"
	"podnet.io/podnet/agent/peers"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/underlay"
	"podnet.io/podnet/test/testenv"
)

func init() { ctrllog.SetLogger(logr.Discard()) }

// recorder is a dataplane that remembers the last flood list per bridge
// and has the VXLAN devices the test gives it, and a tunnel table that
// remembers the last ruleset.
type recorder struct {
	mu      sync.Mutex
	last    map[string]string
	peers   map[string][]net.IP
	devices map[string]dataplane.SpanDevice
	table   *underlay.Ruleset
}

func newRecorder() *recorder {
	return &recorder{last: map[string]string{}, peers: map[string][]net.IP{}, devices: map[string]dataplane.SpanDevice{}}
}

func (r *recorder) SyncPeers(_ context.Context, bridge string, ips []net.IP) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last[bridge] = fmt.Sprint(ips)
	r.peers[bridge] = ips
	return nil
}

func (r *recorder) SpanDevices(context.Context) ([]dataplane.SpanDevice, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []dataplane.SpanDevice
	for b, d := range r.devices {
		d.Bridge, d.Peers = b, r.peers[b]
		out = append(out, d)
	}
	return out, nil
}

func (r *recorder) Apply(rs underlay.Ruleset) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.table = &rs
	return nil
}

func (r *recorder) setDevice(bridge string, d *dataplane.SpanDevice) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d == nil {
		delete(r.devices, bridge)
		return
	}
	r.devices[bridge] = *d
}

func (r *recorder) get(bridge string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[bridge]
}

// allowed is what the table lets send VNI vni ("-" when it does not lock
// the VNI, "none" when there is no table).
func (r *recorder) allowed(vni int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.table == nil || r.table.Empty() {
		return "none"
	}
	for _, s := range r.table.Sets {
		if strings.HasPrefix(s.Name, fmt.Sprintf("from-vxlan-4789-%d-", vni)) {
			return fmt.Sprint(s.Addrs)
		}
	}
	return "-"
}

func createNode(t *testing.T, c client.Client, name, vnis string, addrs ...string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	if vnis != "" {
		n.Annotations = map[string]string{v1alpha1.NodeVNIsAnnotation: vnis}
	}
	if err := c.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	setAddresses(t, c, name, addrs...)
}

func setAddresses(t *testing.T, c client.Client, name string, addrs ...string) {
	t.Helper()
	var n corev1.Node
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}}
	for _, a := range addrs {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a})
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "a message the cache must not keep"}}
	if err := c.Status().Update(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
}

func setVNIs(t *testing.T, c client.Client, name, vnis string) {
	t.Helper()
	var n corev1.Node
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[v1alpha1.NodeVNIsAnnotation] = vnis
	if err := c.Update(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationPeersFollowNodes runs the peer watch with the agent's own
// cache options against a real API server: the cached Nodes are trimmed;
// tracking a bridge locks its VNI to its peers and publishes the VNI on
// this node before any device exists; the flood lists and the table follow
// joins, address changes, nodes starting and stopping to carry a VNI and
// leaves; a node whose InternalIP turns loopback is dropped; and once the
// devices are gone the table and the annotation go too.
func TestIntegrationPeersFollowNodes(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	c := env.Client
	createNode(t, c, "n1", "", "10.0.0.1", "fd00::1")
	createNode(t, c, "n2", "7,8", "10.0.0.2", "fd00::2")
	mgr, err := manager.New(env.Config, manager.Options{
		Scheme:  env.Scheme,
		Cache:   agent.CacheOptions("n1"),
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	w := &peers.Watch{NodeName: "n1", Dataplane: rec, Lock: rec, Resync: 2 * time.Second}
	if err := w.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	testenv.RunManager(t, ctx, mgr)
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}

	var cached corev1.Node
	if err := mgr.GetCache().Get(ctx, client.ObjectKey{Name: "n2"}, &cached); err != nil {
		t.Fatal(err)
	}
	if len(cached.Labels) > 0 || len(cached.Status.Conditions) > 0 || len(cached.Status.Addresses) != 2 || cached.Annotations[v1alpha1.NodeVNIsAnnotation] != "7,8" {
		t.Fatalf("cached node not trimmed to its InternalIPs and VNIs: labels %v, conditions %v, addresses %v, annotations %v", cached.Labels, cached.Status.Conditions, cached.Status.Addresses, cached.Annotations)
	}

	v4 := peers.Span{VNI: 7, Port: 4789, Family: corev1.IPv4Protocol}
	v6 := peers.Span{VNI: 8, Port: 4789, Family: corev1.IPv6Protocol}
	own, others, err := w.NodeAddresses(ctx, v4)
	if err != nil || fmt.Sprint(own) != "[10.0.0.1 fd00::1]" || fmt.Sprint(others) != "[10.0.0.2]" {
		t.Fatalf("NodeAddresses = %v, %v, %v; want [10.0.0.1 fd00::1], [10.0.0.2]", own, others, err)
	}
	for _, tr := range []struct {
		bridge string
		span   peers.Span
	}{{"pnbr-v4", v4}, {"pnbr-v6", v6}} {
		if err := w.Track(ctx, tr.bridge, tr.span); err != nil {
			t.Fatal(err)
		}
	}
	// Locked and published by Track itself, before the devices exist.
	if got := rec.allowed(7); got != "[10.0.0.2]" {
		t.Fatalf("after Track, VNI 7 accepted from %s, want [10.0.0.2]", got)
	}
	if got := rec.allowed(8); got != "[fd00::2]" {
		t.Fatalf("after Track, VNI 8 accepted from %s, want [fd00::2]", got)
	}
	var n1 corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: "n1"}, &n1); err != nil || n1.Annotations[v1alpha1.NodeVNIsAnnotation] != "7,8" {
		t.Fatalf("n1 publishes %q (%v), want 7,8", n1.Annotations[v1alpha1.NodeVNIsAnnotation], err)
	}
	rec.setDevice("pnbr-v4", &dataplane.SpanDevice{VNI: 7, Port: 4789})
	rec.setDevice("pnbr-v6", &dataplane.SpanDevice{VNI: 8, Port: 4789, Local: net.ParseIP("fd00::1")})

	wait := func(what string, check func() error) {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, what, func(context.Context) error { return check() })
	}
	flood := func(bridge, want string) func() error {
		return func() error {
			if got := rec.get(bridge); got != want {
				return fmt.Errorf("flood list of %s %q, want %q", bridge, got, want)
			}
			return nil
		}
	}
	table := func(vni int, want string) func() error {
		return func() error {
			if got := rec.allowed(vni); got != want {
				return fmt.Errorf("VNI %d accepted from %s, want %s", vni, got, want)
			}
			return nil
		}
	}
	createNode(t, c, "n3", "7", "10.0.0.3")
	wait("a node joins", flood("pnbr-v4", "[10.0.0.2 10.0.0.3]"))
	wait("a joining node is allowed to send", table(7, "[10.0.0.2 10.0.0.3]"))
	wait("an IPv4-only node is no IPv6 peer", flood("pnbr-v6", "[fd00::2]"))
	createNode(t, c, "n4", "8", "10.0.0.4")
	setAddresses(t, c, "n2", "10.0.0.22", "fd00::22")
	wait("a node changes address", flood("pnbr-v4", "[10.0.0.3 10.0.0.22]"))
	wait("a node changes address (IPv6)", flood("pnbr-v6", "[fd00::22]"))
	wait("the table follows", table(7, "[10.0.0.3 10.0.0.22]"))
	if got := rec.get("pnbr-v4"); strings.Contains(got, "10.0.0.4") {
		t.Fatalf("a node that does not carry VNI 7 is flooded to: %s", got)
	}
	setAddresses(t, c, "n3", "127.0.0.2")
	wait("a node whose InternalIP turns loopback is no peer", flood("pnbr-v4", "[10.0.0.22]"))
	wait("nor allowed to send", table(7, "[10.0.0.22]"))
	setAddresses(t, c, "n3", "10.0.0.3")
	wait("it comes back with a usable address", flood("pnbr-v4", "[10.0.0.3 10.0.0.22]"))
	setVNIs(t, c, "n3", "")
	wait("a node that stops carrying the VNI leaves", flood("pnbr-v4", "[10.0.0.22]"))
	if err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}); err != nil {
		t.Fatal(err)
	}
	wait("a node leaves", flood("pnbr-v4", "[]"))
	wait("and may send nothing", table(7, "[]"))

	rec.setDevice("pnbr-v4", nil)
	wait("a network whose device is gone is unlocked", table(7, "-"))
	rec.setDevice("pnbr-v6", nil)
	wait("no network, no table", table(8, "none"))
	testenv.Eventually(t, 30*time.Second, "n1 publishes no VNI", func(ctx context.Context) error {
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: "n1"}, &n); err != nil {
			return err
		}
		if v, ok := n.Annotations[v1alpha1.NodeVNIsAnnotation]; ok {
			return fmt.Errorf("n1 still publishes %q", v)
		}
		return nil
	})
}
