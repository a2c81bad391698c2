//go:build bench

package scale

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/controller"
	"podnet.io/podnet/test/simnode"
	"podnet.io/podnet/test/testenv"
)

func unthrottled(env *testenv.Env) *rest.Config {
	c := rest.CopyConfig(env.Config)
	c.QPS, c.Burst = -1, 0
	return c
}

// adminClient is the fake kubelet's and the bench's own client.
func adminClient(t *testing.T, env *testenv.Env) client.Client {
	c, err := client.New(unthrottled(env), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startController runs the real controller with a counter of its own.
func startController(t *testing.T, env *testenv.Env) *simnode.Counter {
	counter := &simnode.Counter{}
	cfg := unthrottled(env)
	cfg.UserAgent = controller.Name
	cfg.WrapTransport = counter.Wrap
	skip := true
	mgr, err := manager.New(cfg, manager.Options{Scheme: env.Scheme, Cache: controller.CacheOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"}, Controller: config.Controller{SkipNameValidation: &skip}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := controller.Setup(ctx, mgr, controller.Options{Grace: 5 * time.Second, Period: time.Minute}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return counter
}

// startNodes starts k agents and counts the claim events their caches get.
func startNodes(t *testing.T, env *testenv.Env, ap *simnode.Approver, k int, old bool) ([]*simnode.Node, *atomic.Int64) {
	nodes := make([]*simnode.Node, k)
	events := &atomic.Int64{}
	for i := range nodes {
		n, err := simnode.Start(unthrottled(env), env.Scheme, fmt.Sprintf("node-%d", i), ap.Verifier,
			simnode.Options{Resync: resync, OldDesign: old, OldSweep: oldSweep})
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
		inf, err := n.Manager.GetCache().GetInformer(context.Background(), &v1alpha1.IPClaim{})
		if err != nil {
			t.Fatal(err)
		}
		count := func(any) { events.Add(1) }
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: count, DeleteFunc: count}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			_ = n.Stop()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, n := range nodes {
		if _, err := n.WaitReady(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return nodes, events
}

// countClaimEvents counts every claim creation and deletion, once, with a
// watch of the bench's own.
func countClaimEvents(t *testing.T, env *testenv.Env, n *atomic.Int64) {
	count := func(any) { n.Add(1) }
	watchOwn(t, env, &v1alpha1.IPClaim{}, toolscache.ResourceEventHandlerFuncs{AddFunc: count, DeleteFunc: count})
}

// watchOwn hands every event of obj's kind to h, from an informer of the
// bench's own that stops when the test ends, and returns once it synced.
func watchOwn(t *testing.T, env *testenv.Env, obj client.Object, h toolscache.ResourceEventHandler) {
	ca, err := cache.New(unthrottled(env), cache.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := ca.GetInformer(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(h); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ca.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	ca.WaitForCacheSync(ctx)
}

// makePods are the pods of every node, every other one asking for a
// network; startPod approves those right before it creates them.
func makePods(k int) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range k {
		for j := range podsPerNode {
			p := simnode.NewPod("default", fmt.Sprintf("n%d-p%d", i, j), fmt.Sprintf("node-%d", i))
			if j%2 == 0 {
				p.Annotations = map[string]string{v1alpha1.NetworksAnnotation: "data"}
			}
			pods = append(pods, p)
		}
	}
	return pods
}

// startPod signs the approval of a pod that asks for a network, as the
// webhook does at admission (an approval is valid only for a pod created
// right after it was issued), and creates and runs the pod.
func startPod(ctx context.Context, ap *simnode.Approver, kubelet simnode.Kubelet, p *corev1.Pod) error {
	if p.Annotations[v1alpha1.NetworksAnnotation] != "" {
		if err := ap.Approve(p, "bench", "data", pool); err != nil {
			return err
		}
	}
	return kubelet.Run(ctx, p)
}

// runAll applies f to every pod, 32 at a time.
func runAll(t *testing.T, _ context.Context, pods []*corev1.Pod, f func(*corev1.Pod) error) {
	var wg sync.WaitGroup
	work := make(chan *corev1.Pod)
	errs := make(chan error, len(pods))
	for range 32 {
		wg.Go(func() {
			for p := range work {
				if err := f(p); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, p := range pods {
		work <- p
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func attached(nodes []*simnode.Node) int {
	n := 0
	for _, nd := range nodes {
		n += nd.Dataplane.Attached()
	}
	return n
}

// waitAttached waits until the agents hold interfaces for want pods.
func waitAttached(t *testing.T, nodes []*simnode.Node, want int) int {
	deadline := time.Now().Add(20 * time.Minute)
	for attached(nodes) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d pods attached, want %d", attached(nodes), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return want
}

func total(nodes []*simnode.Node) simnode.Counts {
	var c simnode.Counts
	for _, n := range nodes {
		s := n.Counter.Snapshot()
		c.Gets += s.Gets
		c.Lists += s.Lists
		c.Watches += s.Watches
		c.Writes += s.Writes
		c.Discovery += s.Discovery
	}
	return c
}

// settle waits until the agents sent no write for two seconds (status
// patches and Events follow the attach).
func settle(nodes []*simnode.Node) {
	last, since := total(nodes).Writes, time.Now()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if w := total(nodes).Writes; w != last {
			last, since = w, time.Now()
		} else if time.Since(since) >= 2*time.Second {
			return
		}
	}
}

// cachedClaims is the mean number of claims in an agent's cache.
func cachedClaims(t *testing.T, nodes []*simnode.Node) float64 {
	sum := 0
	for _, n := range nodes {
		var list v1alpha1.IPClaimList
		if err := n.Manager.GetCache().List(context.Background(), &list); err != nil {
			t.Fatal(err)
		}
		sum += len(list.Items)
	}
	return float64(sum) / float64(len(nodes))
}

// duplicates counts addresses podnet gave two pods on one network
// (simnode.DuplicateAddresses).
func duplicates(t *testing.T, env *testenv.Env) int {
	var pods corev1.PodList
	if err := adminClient(t, env).List(context.Background(), &pods); err != nil {
		t.Fatal(err)
	}
	return simnode.DuplicateAddresses(pods.Items)
}

// restartOne stops the first node's agent and starts a fresh one for the
// same node, returning how long it took to become ready.
func restartOne(t *testing.T, env *testenv.Env, ap *simnode.Approver, nodes []*simnode.Node, old bool) time.Duration {
	if err := nodes[0].Stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	n, err := simnode.Start(unthrottled(env), env.Scheme, nodes[0].Name, ap.Verifier,
		simnode.Options{Resync: resync, OldDesign: old, OldSweep: oldSweep})
	if err != nil {
		t.Fatal(err)
	}
	nodes[0] = n
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	took, err := n.WaitReady(ctx, start)
	if err != nil {
		t.Fatal(err)
	}
	return took
}

// deleteAll deletes every pod and returns the claims and attachments
// still there once the agents and the controller had time to clean up.
func deleteAll(t *testing.T, ctx context.Context, env *testenv.Env, kubelet simnode.Kubelet, nodes []*simnode.Node) (leaked, unattached int) {
	c := adminClient(t, env)
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	list := make([]*corev1.Pod, len(pods.Items))
	for i := range pods.Items {
		list[i] = &pods.Items[i]
	}
	runAll(t, ctx, list, func(p *corev1.Pod) error { return kubelet.Delete(ctx, p) })
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		var claims v1alpha1.IPClaimList
		if err := c.List(ctx, &claims); err != nil {
			t.Fatal(err)
		}
		leaked, unattached = len(claims.Items), attached(nodes)
		if (leaked == 0 && unattached == 0) || time.Now().After(deadline) {
			return leaked, unattached
		}
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func report(r result) {
	p := fmt.Sprintf("scale_%s_k%d_", r.design, r.k)
	fmt.Printf("BENCH %speriodic_requests %.2f req/s\n", p, r.periodicPerSec)
	fmt.Printf("BENCH %spod_start_reads %.2f req/pod\n", p, r.startReads)
	fmt.Printf("BENCH %spod_start_writes %.2f req/pod\n", p, r.startWrites)
	fmt.Printf("BENCH %spod_stop_reads %.2f req/pod\n", p, r.stopReads)
	fmt.Printf("BENCH %spod_stop_writes %.2f req/pod\n", p, r.stopWrites)
	fmt.Printf("BENCH %scached_claims_per_agent %.1f claims\n", p, r.cachedClaims)
	fmt.Printf("BENCH %sheap_per_agent %.2f MiB\n", p, r.heapPerAgentMiB)
	fmt.Printf("BENCH %swatch_events_per_claim_change %.2f events\n", p, r.eventsPerChange)
	fmt.Printf("BENCH %sreadiness_after_restart %d ms\n", p, r.readiness.Milliseconds())
	fmt.Printf("BENCH %sduplicates %d addresses\n", p, r.duplicates)
	fmt.Printf("BENCH %sleaked_claims %d claims\n", p, r.leaked)
	fmt.Printf("BENCH %sleft_attached %d pods\n", p, r.unattached)
}
