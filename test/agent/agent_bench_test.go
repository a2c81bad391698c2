//go:build bench

package agent

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/bench"
	"podnet.io/podnet/test/testenv"
)

// readyWatch records when each pod of a namespace first shows the
// networks-ready condition True, from one watch, so that observing costs
// no polling delay.
type readyWatch struct {
	mu    sync.Mutex
	at    map[types.UID]time.Time
	ready map[types.UID]chan struct{}
}

func (w *world) watchReady(t *testing.T, ctx context.Context, namespace string) *readyWatch {
	t.Helper()
	c, err := client.NewWithWatch(w.env.Config, client.Options{Scheme: w.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	rw := &readyWatch{at: map[types.UID]time.Time{}, ready: map[types.UID]chan struct{}{}}
	// The API server's watch cache may refuse a watch for a while after
	// start ("too large resource version"): watch again until it holds.
	go func() {
		for ctx.Err() == nil {
			wi, err := c.Watch(ctx, &corev1.PodList{}, client.InNamespace(namespace))
			if err == nil {
				rw.consume(wi)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return rw
}

// consume records ready pods from one watch until it ends or fails.
func (rw *readyWatch) consume(wi watch.Interface) {
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		if ev.Type == watch.Error {
			return
		}
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == v1alpha1.NetworksReadyCondition && cond.Status == corev1.ConditionTrue {
				rw.mark(p.UID, time.Now())
			}
		}
	}
}

func (rw *readyWatch) ch(uid types.UID) chan struct{} {
	c, ok := rw.ready[uid]
	if !ok {
		c = make(chan struct{})
		rw.ready[uid] = c
	}
	return c
}

func (rw *readyWatch) mark(uid types.UID, now time.Time) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if _, seen := rw.at[uid]; seen {
		return
	}
	rw.at[uid] = now
	close(rw.ch(uid))
}

// wait returns when the pod turned ready, or an error after timeout. It
// never stops the test itself, so workers may call it.
func (rw *readyWatch) wait(uid types.UID, timeout time.Duration) (time.Time, error) {
	rw.mu.Lock()
	c := rw.ch(uid)
	rw.mu.Unlock()
	select {
	case <-c:
	case <-time.After(timeout):
		rw.mu.Lock()
		n := len(rw.at)
		rw.mu.Unlock()
		return time.Time{}, fmt.Errorf("pod %s not networks-ready within %s (%d pods seen ready)", uid, timeout, n)
	}
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.at[uid], nil
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
}

func mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// memory prints the agent's resident memory at a point (idle, 250_pods),
// split by the kernel into anonymous pages (heap, stacks) and pages of
// the binary, and returns the total in MiB. With PODNET_BENCH_HEAP_DIR
// set (and the agent started with a pprof address) it keeps there, to see
// where the memory goes, the agent's smaps_rollup and its heap and
// goroutine profiles (go tool pprof <dir>/agent-heap-<at>.pprof).
func memory(t *testing.T, a *agentProc, at, pprofAddr string) float64 {
	t.Helper()
	pid := a.Cmd.Process.Pid
	st, err := bench.ProcStatus(pid)
	if err != nil {
		t.Fatal(err)
	}
	mib := func(kb int64) float64 { return float64(kb) / 1024 }
	fmt.Printf("BENCH agent_rss_%s %.1f MiB\n", at, mib(st["VmRSS"]))
	fmt.Printf("BENCH agent_rss_anon_%s %.1f MiB\n", at, mib(st["RssAnon"]))
	fmt.Printf("BENCH agent_rss_file_%s %.1f MiB\n", at, mib(st["RssFile"]))
	if dir := os.Getenv("PODNET_BENCH_HEAP_DIR"); dir != "" && pprofAddr != "" {
		rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		if err != nil {
			t.Fatal(err)
		}
		keep(t, filepath.Join(dir, "agent-smaps_rollup-"+at), rollup)
		for _, p := range []string{"heap", "goroutine?debug=1"} {
			resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/" + p)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			name, _, _ := strings.Cut(p, "?")
			keep(t, filepath.Join(dir, "agent-"+name+"-"+at+".pprof"), body)
		}
	}
	return mib(st["VmRSS"])
}

func keep(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// daemonSetEnv is the environment the agent's DaemonSet gives it
// (GOMEMLIMIT from its memory limit, GOGC), so the bench measures the
// agent as it runs on a node.
func daemonSetEnv(t *testing.T, w *world) []string {
	t.Helper()
	environ, err := bench.DaemonSetEnv(filepath.Join(w.env.Root, "deploy", "podnet", "agent.yaml"), v1alpha1.AgentName)
	if err != nil {
		t.Fatal(err)
	}
	return environ
}

// TestBenchAgent measures, with the real agent binary, a real containerd
// and a real API server:
//   - sandbox ready → networks-ready for 100 pods with 2 networks each
//     (from RunPodSandbox returning to the condition being seen in a watch);
//   - pod start (create + sandbox, and for podnet pods the networks) with
//     and without podnet networks, alternating, as a ratio;
//   - the agent's resident memory idle and with 250 podnet pods on the
//     node, and above the floor of a program that only imports what the
//     agent imports (printFloors).
func TestBenchAgent(t *testing.T) {
	w := newWorld(t)
	ns := w.ensureNamespace("bench")
	// The default resync: the figures are those of a normally configured
	// agent. PODNET_BENCH_AGENT_FLAGS adds flags, for side-by-side runs.
	flags := append([]string{"--resync", "30s"}, strings.Fields(os.Getenv("PODNET_BENCH_AGENT_FLAGS"))...)
	var pprofAddr string
	if os.Getenv("PODNET_BENCH_HEAP_DIR") != "" {
		pprofAddr = testenv.FreeAddr(t)
		flags = append(flags, "--pprof-bind-address="+pprofAddr)
	}
	environ := daemonSetEnv(t, w)
	fmt.Printf("BENCH agent_bench_env %q env\n", strings.Join(environ, " "))
	// Before the agent starts, so that the two do not share the machine.
	floor := printFloors(t, environ)
	agent := w.startAgentEnv(environ, flags...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rw := w.watchReady(t, ctx, ns)
	time.Sleep(2 * time.Second) // first sweep and cache sync
	idle := memory(t, agent, "idle", pprofAddr)
	fmt.Printf("BENCH agent_rss_above_floor_imports_idle %.1f MiB\n", idle-floor)
	fmt.Printf("BENCH agent_goroutines_idle %.0f goroutines\n", bench.MustGauge(t, scrape(t, agent.metrics), "go_goroutines"))

	a, b := benchInterfaces()
	// Each pod gets its own approval, issued right before it is created,
	// as through the webhook: an approval binds the pod created after it.
	ann := func() map[string]string { return w.approvedAnnotations(ns, a, b) }

	n := bench.Size(100, 3)
	var attach, withNet, without []time.Duration
	for i := range n {
		start := time.Now()
		p := w.createPod(ns, fmt.Sprintf("net-%d", i), ann())
		w.runSandbox(p)
		sandboxReady := time.Now()
		readyAt, err := rw.wait(p.UID, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		attach = append(attach, max(readyAt.Sub(sandboxReady), 0))
		withNet = append(withNet, readyAt.Sub(start))

		start = time.Now()
		q := w.createPod(ns, fmt.Sprintf("plain-%d", i), nil)
		w.runSandbox(q)
		without = append(without, time.Since(start))
	}
	slices.Sort(attach)
	fmt.Printf("BENCH agent_sandbox_to_networks_ready_p50 %s ms\n", ms(bench.Percentile(attach, 0.50)))
	fmt.Printf("BENCH agent_sandbox_to_networks_ready_p99 %s ms\n", ms(bench.Percentile(attach, 0.99)))
	fmt.Printf("BENCH agent_sandbox_to_networks_ready_max %s ms\n", ms(attach[len(attach)-1]))
	fmt.Printf("BENCH pod_start_with_2_networks_mean %s ms\n", ms(mean(withNet)))
	fmt.Printf("BENCH pod_start_without_networks_mean %s ms\n", ms(mean(without)))
	fmt.Printf("BENCH pod_start_ratio_with_vs_without %.2f x\n", float64(mean(withNet))/float64(mean(without)))

	// Fill the node to 250 podnet pods, four sandboxes at a time. Workers
	// report failures instead of stopping the test, so the feeding loop
	// never blocks on a worker that is gone.
	total := bench.Size(250, 6)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	work := make(chan int, total)
	for i := n; i < total; i++ {
		work <- i
	}
	close(work)
	for range 4 {
		wg.Go(func() {
			for i := range work {
				p := &corev1.Pod{}
				err := w.tryCreatePod(ns, fmt.Sprintf("net-%d", i), ann(), p)
				if err == nil {
					_, err = w.cri.RunSandbox(ctx, p.Namespace, p.Name, string(p.UID))
				}
				if err == nil {
					_, err = rw.wait(p.UID, 2*time.Minute)
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d pods failed, first: %v", len(errs), total-n, errs[0])
	}
	// Let a resync and a sweep pass over the full node before measuring.
	time.Sleep(5 * time.Second)
	body := scrape(t, agent.metrics)
	if !strings.Contains(body, fmt.Sprintf("podnet_agent_pods %d", total)) {
		t.Fatalf("agent does not report %d managed pods", total)
	}
	full := memory(t, agent, "250_pods", pprofAddr)
	fmt.Printf("BENCH agent_rss_ratio_250_pods_vs_idle %.2f x\n", full/idle)
	fmt.Printf("BENCH agent_rss_above_floor_imports_250_pods %.1f MiB\n", full-floor)
	fmt.Printf("BENCH agent_bench_machine_loadavg_1m %s load\n", bench.LoadAverage())
	// Where the resident memory goes, from the Go runtime's own figures:
	// the live heap, the heap the runtime keeps without returning it to
	// the kernel, and the goroutine stacks.
	for _, g := range []string{"go_memstats_heap_inuse_bytes", "go_memstats_heap_idle_bytes", "go_memstats_heap_released_bytes", "go_memstats_stack_inuse_bytes", "go_memstats_next_gc_bytes"} {
		v, err := bench.Gauge(body, g)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("BENCH agent_%s_250_pods %.1f MiB\n", strings.TrimSuffix(strings.TrimPrefix(g, "go_memstats_"), "_bytes"), v/(1<<20))
	}
	fmt.Printf("BENCH agent_goroutines_250_pods %.0f goroutines\n", bench.MustGauge(t, body, "go_goroutines"))
	// What the DaemonSet's GOGC costs: the agent's CPU from its start
	// through the 250 pods, collector included.
	fmt.Printf("BENCH agent_cpu_250_pods %.2f s\n", bench.MustGauge(t, body, "process_cpu_seconds_total"))
}

// TestBenchAgentBurst measures 100 pods with 2 networks arriving on one node
// at once, as a Deployment scale-up does: every pod is created, then every
// sandbox is started concurrently, and each pod's time from its sandbox
// being ready to its networks-ready condition is recorded, as well as the
// time from the first sandbox start until all 100 pods are ready.
func TestBenchAgentBurst(t *testing.T) {
	w := newWorld(t)
	burst := w.ensureNamespace("burst")
	agent := w.startAgent(append([]string{"--resync", "30s"}, strings.Fields(os.Getenv("PODNET_BENCH_AGENT_FLAGS"))...)...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rw := w.watchReady(t, ctx, burst)
	time.Sleep(2 * time.Second) // cache sync

	a, b := benchInterfaces()
	n := bench.Size(100, 3)
	// From before the pods exist: the agent reserves their addresses as
	// soon as it sees them, before their sandboxes.
	before := scrape(t, agent.metrics)
	reads0, writes0 := bench.Requests(before)
	cpu0 := bench.MustGauge(t, before, "process_cpu_seconds_total")
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = w.createPod(burst, fmt.Sprintf("burst-%d", i), w.approvedAnnotations(burst, a, b))
	}
	attach := make([]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i, p := range pods {
		wg.Go(func() {
			if _, err := w.cri.RunSandbox(ctx, p.Namespace, p.Name, string(p.UID)); err != nil {
				errs[i] = err
				return
			}
			sandboxReady := time.Now()
			readyAt, err := rw.wait(p.UID, time.Minute)
			errs[i] = err
			attach[i] = max(readyAt.Sub(sandboxReady), 0)
		})
	}
	wg.Wait()
	all := time.Since(start)
	for i, err := range errs {
		if err != nil {
			got, _ := w.getPod(ctx, pods[i].Namespace, pods[i].Name)
			t.Fatalf("burst of %d pods: %v; its conditions: %+v", n, err, got.Status.Conditions)
		}
	}
	slices.Sort(attach)
	fmt.Printf("BENCH agent_burst100_sandbox_to_networks_ready_p50 %s ms\n", ms(bench.Percentile(attach, 0.50)))
	fmt.Printf("BENCH agent_burst100_sandbox_to_networks_ready_p99 %s ms\n", ms(bench.Percentile(attach, 0.99)))
	fmt.Printf("BENCH agent_burst100_sandbox_to_networks_ready_max %s ms\n", ms(attach[n-1]))
	fmt.Printf("BENCH agent_burst100_all_networks_ready %s ms\n", ms(all))
	after := scrape(t, agent.metrics)
	reads, writes := bench.Requests(after)
	fmt.Printf("BENCH agent_burst100_api_reads_per_pod %.2f requests\n", (reads-reads0)/float64(n))
	fmt.Printf("BENCH agent_burst100_api_writes_per_pod %.2f requests\n", (writes-writes0)/float64(n))
	// The agent's own CPU, from the pods' creation until all are ready:
	// what a burst takes of the cores its pods start on.
	fmt.Printf("BENCH agent_burst100_cpu_per_pod %.1f ms\n", 1000*(bench.MustGauge(t, after, "process_cpu_seconds_total")-cpu0)/float64(n))
}

// benchInterfaces are the two bridge interfaces of every bench pod, on the
// test profile's bench networks, whose pools hold hundreds of pods (the
// agent re-checks that the profile's pools hold the addresses).
func benchInterfaces() (a, b v1alpha1.ApprovedInterface) {
	a, b = data, storage
	a.Network, b.Network = "benchdata", "benchstore"
	a.IPAM = &v1alpha1.ApprovedIPAM{Pools: []string{"10.100.0.0/16"}, Gateways: []string{"10.100.0.1"}}
	a.Routes = []v1alpha1.ApprovedRoute{{Dst: "10.50.0.0/16", Gateway: "10.100.0.1"}}
	b.IPAM = &v1alpha1.ApprovedIPAM{Pools: []string{"10.200.0.0/16"}}
	return a, b
}
