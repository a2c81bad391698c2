package peers_test

import (
	"context"
	"fmt"
	"net"
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
	"podnet.io/podnet/test/testenv"
)

func init() { ctrllog.SetLogger(logr.Discard()) }

// recorder is a dataplane that remembers the last flood list per bridge.
type recorder struct {
	mu   sync.Mutex
	last map[string]string
}

func (r *recorder) SyncPeers(_ context.Context, bridge string, ips []net.IP) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last[bridge] = fmt.Sprint(ips)
	return nil
}

func (r *recorder) get(bridge string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[bridge]
}

func createNode(t *testing.T, c client.Client, name string, addrs ...string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
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

// TestIntegrationPeersFollowNodes runs the peer watch with the agent's own
// cache options against a real API server: the cached Nodes are trimmed,
// NodeAddresses gives this node's addresses and the others', and a join,
// an address change and a leave each reach the flood list of every
// tracked bridge, in its family.
func TestIntegrationPeersFollowNodes(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	c := env.Client
	createNode(t, c, "n1", "10.0.0.1", "fd00::1")
	createNode(t, c, "n2", "10.0.0.2", "fd00::2")
	mgr, err := manager.New(env.Config, manager.Options{
		Scheme:  env.Scheme,
		Cache:   agent.CacheOptions("n1"),
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{last: map[string]string{}}
	w := &peers.Watch{NodeName: "n1", Dataplane: rec, Resync: time.Hour}
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
	if len(cached.Labels) > 0 || len(cached.Status.Conditions) > 0 || len(cached.Status.Addresses) != 2 {
		t.Fatalf("cached node not trimmed to its InternalIPs: labels %v, conditions %v, addresses %v", cached.Labels, cached.Status.Conditions, cached.Status.Addresses)
	}

	own, others, err := w.NodeAddresses(ctx)
	if err != nil || fmt.Sprint(own) != "[10.0.0.1 fd00::1]" || fmt.Sprint(others) != "[10.0.0.2 fd00::2]" {
		t.Fatalf("NodeAddresses = %v, %v, %v; want [10.0.0.1 fd00::1], [10.0.0.2 fd00::2]", own, others, err)
	}
	w.Track("pnbr-v4", corev1.IPv4Protocol)
	w.Track("pnbr-v6", corev1.IPv6Protocol)

	wait := func(what, bridge, want string) {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, what, func(context.Context) error {
			if got := rec.get(bridge); got != want {
				return fmt.Errorf("flood list of %s %q, want %q", bridge, got, want)
			}
			return nil
		})
	}
	createNode(t, c, "n3", "10.0.0.3")
	wait("a node joins", "pnbr-v4", "[10.0.0.2 10.0.0.3]")
	wait("an IPv4-only node is no IPv6 peer", "pnbr-v6", "[fd00::2]")
	setAddresses(t, c, "n2", "10.0.0.22", "fd00::22")
	wait("a node changes address", "pnbr-v4", "[10.0.0.3 10.0.0.22]")
	wait("a node changes address (IPv6)", "pnbr-v6", "[fd00::22]")
	if err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3"}}); err != nil {
		t.Fatal(err)
	}
	wait("a node leaves", "pnbr-v4", "[10.0.0.22]")
}
