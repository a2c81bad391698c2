//go:build bench

package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/agent"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
	"podnet.io/podnet/test/bench"
	"podnet.io/podnet/test/simnode"
	"podnet.io/podnet/test/testenv"
)

// The published comparison this bench takes its shape from: Spiderpool's
// docs/concepts/ipam-performance.md, 1,000 pods created at once on 10
// nodes, time until every pod runs. Its figures come from another cluster
// and another run, so they are printed as context, never as a ratio.
var publishedIPAM = []string{
	"CONTEXT ipam_published_spiderpool_1000_pods_10_nodes 182-207 s (Spiderpool docs/concepts/ipam-performance.md)",
	"CONTEXT ipam_published_calico_1000_pods_10_nodes 322 s (same page)",
	"CONTEXT ipam_published_whereabouts_1000_pods_10_nodes 2529 s (same page)",
	"CONTEXT ipam_published_whereabouts_exact_pool_of_1000 stalled at 845 of 1000 pods (same page)",
}

// ipamShape is one run: pods across nodes, in tenants namespaces, from
// pool (whose gateway is never given out), after fillers pods of another
// namespace took the pool's spare addresses, so that exactly pods
// addresses are free when the pool is exact.
type ipamShape struct {
	name                 string
	pods, nodes, tenants int
	pool, gateway        netip.Prefix
	fillers              int
	bound                time.Duration
}

// TestBenchIPAM runs the published comparison's shape on the scale
// harness: PODNET_IPAM_PODS pods (`make bench-scale`: 1,000; default 100;
// 20 at the smallest size) on 10 simulated nodes (2 at the smallest size),
// created at once, in 10 namespaces under the default per-namespace quota,
// with the real API server, agents and controller. It reports the time
// until every pod holds its address, first from a roomy pool, then from a
// pool with exactly as many free addresses as pods. It fails when a pod
// gets no address within a generous bound or when an address is given
// twice.
func TestBenchIPAM(t *testing.T) {
	var pods int
	for _, n := range ks("PODNET_IPAM_PODS", bench.Size("100", "20")) {
		pods = n
	}
	if pods == 0 {
		t.Fatal("PODNET_IPAM_PODS: want a number of pods above 0")
	}
	roomy := ipamShape{name: "roomy", pods: pods, nodes: bench.Size(10, 2), tenants: bench.Size(10, 2),
		pool: netip.MustParsePrefix("10.128.0.0/16"), bound: bench.Size(10*time.Minute, time.Minute)}
	roomy.gateway = netip.PrefixFrom(roomy.pool.Addr().Next(), 32)
	exact := roomy
	exact.name = "exact"
	exact.pool, exact.fillers = exactPool(netip.MustParseAddr("10.200.0.0"), pods)
	exact.gateway = netip.PrefixFrom(exact.pool.Addr().Next(), 32)
	for _, s := range []ipamShape{roomy, exact} {
		t.Run(s.name, func(t *testing.T) { runIPAM(t, s) })
	}
	for _, l := range publishedIPAM {
		fmt.Println(l)
	}
}

// exactPool is the smallest IPv4 pool at base holding n addresses besides
// its network, broadcast and gateway addresses, and how many of them are
// spare: taken by other pods, they leave exactly n free.
func exactPool(base netip.Addr, n int) (netip.Prefix, int) {
	for bits := 30; ; bits-- {
		pool := netip.PrefixFrom(base, bits).Masked()
		if usable(pool) >= n {
			return pool, usable(pool) - n
		}
	}
}

func runIPAM(t *testing.T, s ipamShape) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	c := adminClient(t, env)
	kubelet := simnode.Kubelet{Client: c}
	startController(t, env)
	profiles := ipamProfile(t, ctx, c, s)
	ap, err := simnode.NewApprover()
	if err != nil {
		t.Fatal(err)
	}
	nodes := startAgents(t, env, ap, s.nodes)
	p := fmt.Sprintf("ipam_%s_pods%d_nodes%d_", s.name, s.pods, s.nodes)
	fmt.Printf("BENCH %sload_average_at_start %s load\n", p, bench.LoadAverage())

	// The spare addresses go first, to pods of a namespace of their own.
	fillers := ipamPods(t, ctx, c, "filler", 1, s.fillers, 1)
	runAll(t, ctx, fillers.pods, fillers.start(ctx, ap, kubelet, profiles))
	waitAddressed(t, ctx, c, nodes, 0, s.fillers, s.bound)

	// Then every pod at once.
	tenants := ipamPods(t, ctx, c, "tenant", s.tenants, s.pods, s.nodes)
	began := time.Now()
	runAll(t, ctx, tenants.pods, tenants.start(ctx, ap, kubelet, profiles))
	created := time.Since(began)
	waitAddressed(t, ctx, c, nodes, s.fillers, s.pods, s.bound)
	took := time.Since(began)

	got, dups := addressesSeen(t, ctx, c, s.pool, s.fillers+s.pods, s.bound)
	fmt.Printf("BENCH %sall_created %.1f s\n", p, created.Seconds())
	fmt.Printf("BENCH %sall_addressed %.1f s\n", p, took.Seconds())
	fmt.Printf("BENCH %saddressed %d pods\n", p, got-s.fillers)
	fmt.Printf("BENCH %sfree_addresses_at_start %d addresses\n", p, usable(s.pool)-s.fillers)
	fmt.Printf("BENCH %sduplicates %d addresses\n", p, dups)
	fmt.Printf("BENCH %sload_average_at_end %s load\n", p, bench.LoadAverage())
	if dups != 0 {
		t.Fatalf("%s pool: %d addresses given to two pods", s.name, dups)
	}
}

// startAgents starts k agents with the production defaults of
// podnet-agent's flags (--concurrency, --kube-api-qps, --kube-api-burst)
// and waits until they are ready.
func startAgents(t *testing.T, env *testenv.Env, ap *simnode.Approver, k int) []*simnode.Node {
	o := simnode.Options{Resync: resync, Concurrency: agent.DefaultConcurrency,
		QPS: agent.DefaultKubeAPIQPS, Burst: agent.DefaultKubeAPIBurst}
	nodes := make([]*simnode.Node, 0, k)
	t.Cleanup(func() {
		for _, n := range nodes {
			_ = n.Stop()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for i := range k {
		n, err := simnode.Start(unthrottled(env), env.Scheme, fmt.Sprintf("node-%d", i), ap.Verifier, o)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
		if _, err := n.WaitReady(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return nodes
}

// usable is how many addresses the pool can give pods: all but its
// network, broadcast and gateway addresses.
func usable(pool netip.Prefix) int { return 1<<(32-pool.Bits()) - 3 }

// ipamProfile makes the profile offering network
// "data" from the shape's pool, selecting every opted-in namespace (so
// each namespace gets the default quota of a shared pool), and returns
// the profiles as the webhook prepares them.
func ipamProfile(t *testing.T, ctx context.Context, c client.Client, s ipamShape) *policy.ProfileSet {
	prof := &v1alpha1.NetworkProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec: v1alpha1.NetworkProfileSpec{
			MaxInterfaces: 4,
			Networks: []v1alpha1.Network{{
				Name:   "data",
				Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-data"},
				MTU:    &v1alpha1.MTURange{Default: ptr.To[int32](1500)},
				IPAM:   &v1alpha1.IPAM{Pools: []string{s.pool.String()}, Gateways: []string{s.gateway.Addr().String()}},
			}},
		},
	}
	if err := c.Create(ctx, prof); err != nil {
		t.Fatal(err)
	}
	var list v1alpha1.NetworkProfileList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	return policy.NewProfileSet(list.Items)
}

// podSet is pods with their namespaces as the API server has them.
type podSet struct {
	pods []*corev1.Pod
	ns   map[string]*corev1.Namespace
}

// ipamPods makes n pods asking for network "data", spread over tenants
// opted-in namespaces named prefix-<i> and over nodes nodes.
func ipamPods(t *testing.T, ctx context.Context, c client.Client, prefix string, tenants, n, nodes int) podSet {
	set := podSet{ns: map[string]*corev1.Namespace{}}
	for i := range tenants {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i),
			Labels: map[string]string{v1alpha1.EnabledLabel: "true"}}}
		if err := c.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
		set.ns[ns.Name] = ns // Create filled in what the API server added
	}
	for i := range n {
		p := simnode.NewPod(fmt.Sprintf("%s-%d", prefix, i%tenants), fmt.Sprintf("%s-p%d", prefix, i), fmt.Sprintf("node-%d", i%nodes))
		p.Annotations = map[string]string{v1alpha1.NetworksAnnotation: "data"}
		set.pods = append(set.pods, p)
	}
	return set
}

// start admits a pod as the webhook does, right before it is created,
// and creates and runs it.
func (s podSet) start(ctx context.Context, ap *simnode.Approver, kubelet simnode.Kubelet, profiles *policy.ProfileSet) func(*corev1.Pod) error {
	return func(p *corev1.Pod) error {
		if err := ap.Admit(p, s.ns[p.Namespace], profiles); err != nil {
			return err
		}
		return kubelet.Run(ctx, p)
	}
}

// waitAddressed waits until the agents attached want pods besides the
// before they held already, which they do once every address of the pod
// is claimed, and fails the test when that takes longer than bound,
// naming why the others wait.
func waitAddressed(t *testing.T, ctx context.Context, c client.Client, nodes []*simnode.Node, before, want int, bound time.Duration) {
	deadline := time.Now().Add(bound)
	for attached(nodes)-before < want {
		if time.Now().After(deadline) {
			t.Fatalf("after %s, %d of %d pods hold their addresses; the pods without: %v", bound, attached(nodes)-before, want, waiting(t, ctx, c))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waiting counts the pods whose networks are not ready by the message of
// their condition.
func waiting(t *testing.T, ctx context.Context, c client.Client) map[string]int {
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	why := map[string]int{}
	for _, p := range pods.Items {
		msg := "no condition"
		for _, cond := range p.Status.Conditions {
			if cond.Type == v1alpha1.NetworksReadyCondition {
				msg = string(cond.Status) + ": " + cond.Message
			}
		}
		if !strings.HasPrefix(msg, "True") {
			why[msg]++
		}
	}
	return why
}

// addressesSeen waits until want pods show an address of pool in their
// network-status, as users read it, and returns how many do and the
// duplicates among them (simnode.DuplicateAddresses).
func addressesSeen(t *testing.T, ctx context.Context, c client.Client, pool netip.Prefix, want int, bound time.Duration) (int, int) {
	deadline := time.Now().Add(bound)
	for {
		var pods corev1.PodList
		if err := c.List(ctx, &pods); err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, p := range pods.Items {
			if inPool(p, pool) {
				got++
			}
		}
		if got >= want {
			return got, simnode.DuplicateAddresses(pods.Items)
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, %d pods show an address of %s in their network-status, want %d", bound, got, pool, want)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// inPool reports whether the pod's network-status gives it an address of
// pool on a podnet interface.
func inPool(p corev1.Pod, pool netip.Prefix) bool {
	var st []v1alpha1.NetworkStatus
	if err := json.Unmarshal([]byte(p.Annotations[v1alpha1.NetworkStatusAnnotation]), &st); err != nil {
		return false
	}
	for _, s := range st {
		for _, ip := range s.IPs {
			if a, err := netip.ParsePrefix(ip); !s.Default && err == nil && pool.Contains(a.Addr()) {
				return true
			}
			if a, err := netip.ParseAddr(ip); !s.Default && err == nil && pool.Contains(a) {
				return true
			}
		}
	}
	return false
}
