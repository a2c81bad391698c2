//go:build bench

package scale

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/controller"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/test/bench"
	"podnet.io/podnet/test/simnode"
	"podnet.io/podnet/test/testenv"
)

// The controller bench's cluster: pods spread over ctlNodes nodes in one
// namespace; ctlPodnetPerTen of every ten pods are podnet's, each with a
// signed approval of two interfaces and one IPClaim; a GC sweep deletes
// one pod in ten, in blocks of ten consecutive pods (so 30 % of them are
// podnet's).
const (
	ctlNodes        = 500
	ctlPodnetPerTen = 3
	ctlNamespace    = "default"
	ctlNetwork      = "data"
	ctlBridge       = "pnbr-data"
)

// TestBenchController runs the real podnet-controller binary against an
// API server holding PODNET_CONTROLLER_PODS pods (default 10,000; 100 at
// the smallest size), growing the same cluster from one size to the next,
// and prints at each size its peak and steady resident memory, its time
// to leader-ready, its API requests at start and per minute in steady
// state, and the same for a GC sweep after 10 % of the pods vanish; then
// the log-log slopes of memory and ready time against pods.
func TestBenchController(t *testing.T) {
	sizes := ks("PODNET_CONTROLLER_PODS", bench.Size("10000", "100"))
	env := testenv.Start(t, testenv.Options{})
	c := adminClient(t, env)
	if err := simnode.Grant(context.Background(), c, ctlNamespace, "bench", ctlNetwork, pool); err != nil {
		t.Fatal(err)
	}
	ap, err := simnode.NewApprover()
	if err != nil {
		t.Fatal(err)
	}
	cl := &ctlCluster{c: c, signer: ap}
	bin := buildController(t)
	var runs []ctlRun
	for _, n := range sizes {
		start := time.Now()
		cl.growTo(t, n)
		fmt.Fprintf(os.Stderr, "controller bench: %d pods (%d podnet) created in %s\n", n, cl.podnetLive(), time.Since(start).Round(time.Second))
		runs = append(runs, measureController(t, env, bin, cl, n))
	}
	if len(runs) < 2 {
		return
	}
	for i := 1; i < len(runs); i++ {
		a, b := runs[0], runs[i]
		p := fmt.Sprintf("controller_slope_%d_to_%d_pods_", a.pods, b.pods)
		fmt.Printf("BENCH %ssteady_rss %.2f loglog\n", p, slope(a.pods, b.pods, a.steadyRSS, b.steadyRSS))
		fmt.Printf("BENCH %speak_rss %.2f loglog\n", p, slope(a.pods, b.pods, a.peakRSS, b.peakRSS))
		fmt.Printf("BENCH %sready %.2f loglog\n", p, slope(a.pods, b.pods, a.readyMS, b.readyMS))
		// The linear cost of one more pod, between the smallest and this size.
		fmt.Printf("BENCH %ssteady_rss_per_pod %.3f KiB/pod\n", p, (b.steadyRSS-a.steadyRSS)*1024/float64(b.pods-a.pods))
	}
}

// ctlRun is one size's figures: memory in MiB, time in ms.
type ctlRun struct {
	pods                        int
	steadyRSS, peakRSS, readyMS float64
}

// ctlCluster creates and deletes the bench's pods and claims. Pod i is
// named p-<i>; deleted pods are never reused.
type ctlCluster struct {
	c       client.Client
	signer  *simnode.Approver
	created int // pods ever created (indices 0..created-1)
	deleted int // pods deleted by sweeps
	podnetD int // podnet pods deleted by sweeps
	sweeps  int
}

func (cl *ctlCluster) live() int { return cl.created - cl.deleted }

func isPodnet(i int) bool { return i%10 < ctlPodnetPerTen }

// podnetLive is the number of live podnet pods, hence of live claims.
func (cl *ctlCluster) podnetLive() int {
	n := 0
	for i := range cl.created {
		if isPodnet(i) {
			n++
		}
	}
	return n - cl.podnetD
}

// growTo creates pods (and the claims of podnet pods), 32 at a time,
// until n live.
func (cl *ctlCluster) growTo(t *testing.T, n int) {
	from := cl.created
	to := from + n - cl.live()
	if to <= from {
		return
	}
	parallelIndex(t, from, to, func(i int) error { return cl.createPod(context.Background(), i) })
	cl.created = to
}

// createPod creates pod i, minimal, and for a podnet pod its approval
// (signed as the webhook does) and the claim its agent would make.
func (cl *ctlCluster) createPod(ctx context.Context, i int) error {
	p := simnode.NewPod(ctlNamespace, fmt.Sprintf("p-%06d", i), fmt.Sprintf("node-%03d", i%ctlNodes))
	if isPodnet(i) {
		if err := approve(cl.signer, p); err != nil {
			return err
		}
	}
	if err := cl.c.Create(ctx, p); err != nil {
		return fmt.Errorf("create pod %s: %w", p.Name, err)
	}
	if !isPodnet(i) {
		return nil
	}
	return cl.c.Create(ctx, claimOf(p, i))
}

// approve writes on p a request of two networks and its signed approval:
// a bridge on a VLAN with an address from the pool and two routes, and a
// macvlan; about the size a webhook gives such a pod.
func approve(ap *simnode.Approver, p *corev1.Pod) error {
	request := ctlNetwork + "@net1, uplink@net2"
	a := &v1alpha1.Approval{
		Namespace: p.Namespace, ServiceAccount: v1alpha1.DefaultServiceAccount,
		RequestHash: approval.HashRequest(request), IssuedAt: metav1.Now(),
		Profiles: []v1alpha1.ProfileRef{{Name: "bench", Generation: 1}},
		Interfaces: []v1alpha1.ApprovedInterface{{
			Interface: "net1", Network: ctlNetwork, Profile: "bench", Kind: v1alpha1.KindBridge,
			Bridge: ctlBridge, VLAN: 120, MTU: 9000,
			IPAM:   &v1alpha1.ApprovedIPAM{Pools: []string{pool}, Gateways: []string{"10.128.0.1"}},
			Routes: []v1alpha1.ApprovedRoute{{Dst: "10.50.0.0/16", Gateway: "10.128.0.1"}, {Dst: "10.60.0.0/16", Gateway: "10.128.0.1"}},
		}, {
			Interface: "net2", Network: "uplink", Profile: "bench", Kind: v1alpha1.KindMacvlan,
			Master: "eth1", Mode: "bridge", MTU: 1500,
		}},
	}
	payload, sig, err := ap.Sign(a)
	if err != nil {
		return fmt.Errorf("sign approval of pod %s: %w", p.Name, err)
	}
	p.Annotations = map[string]string{
		v1alpha1.NetworksAnnotation:          request,
		v1alpha1.ApprovedAnnotation:          payload,
		v1alpha1.ApprovedSignatureAnnotation: sig,
	}
	return nil
}

// claimOf is the claim pod p's agent makes for net1, address i of the pool.
func claimOf(p *corev1.Pod, i int) *v1alpha1.IPClaim {
	addr := netip.MustParsePrefix(pool).Addr()
	for range i + 2 {
		addr = addr.Next()
	}
	space := ctlBridge + ".bridge"
	return &v1alpha1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: ipam.ClaimName(space, addr),
			Labels: map[string]string{
				v1alpha1.PodUIDLabel: string(p.UID), v1alpha1.NetworkLabel: ctlNetwork,
				v1alpha1.NodeLabel: p.Spec.NodeName, v1alpha1.NamespaceLabel: p.Namespace,
				v1alpha1.AddressSpaceLabel: space,
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID}},
		},
		Spec: v1alpha1.IPClaimSpec{
			Network: ctlNetwork, Address: addr.String(), Pool: pool, AddressSpace: space,
			Pod:       v1alpha1.PodReference{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)},
			Interface: "net1",
		},
	}
}

// sweep deletes one pod in ten (the next block of every hundred) and
// returns how many, and how many claims the controller must collect.
func (cl *ctlCluster) sweep(t *testing.T) (pods, claims int) {
	var gone []int
	for i := range cl.created {
		if (i/10)%10 == cl.sweeps%10 {
			gone = append(gone, i)
		}
	}
	cl.sweeps++
	for _, i := range gone {
		if isPodnet(i) {
			claims++
		}
	}
	parallelIndex(t, 0, len(gone), func(k int) error {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ctlNamespace, Name: fmt.Sprintf("p-%06d", gone[k])}}
		if err := cl.c.Delete(context.Background(), p, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s: %w", p.Name, err)
		}
		return nil
	})
	cl.deleted += len(gone)
	cl.podnetD += claims
	return len(gone), claims
}

// parallelIndex runs f(i) for i in [from,to) on 32 goroutines and fails
// the test with the first error.
func parallelIndex(t *testing.T, from, to int, f func(i int) error) {
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	var first atomic.Pointer[error]
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < to && first.Load() == nil; i = int(next.Add(1) - 1) {
				if err := f(i); err != nil {
					first.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	wg.Wait()
	if e := first.Load(); e != nil {
		t.Fatal(*e)
	}
}

// ctlProcess is one running controller binary.
type ctlProcess struct {
	proc                  *testenv.Process
	metrics, probe, pprof string
	started               time.Time
}

// buildController builds cmd/podnet-controller as its image does.
func buildController(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "podnet-controller")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/podnet-controller")
	build.Dir = testenv.RepoRoot(t)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build podnet-controller: %v\n%s", err, out)
	}
	return bin
}

// startCtl starts the binary with its Deployment's flags and environment
// (GOMEMLIMIT from its memory limit), a grace compressed to 5 s and the
// shortest periodic pass (1 m), so the steady window holds one.
func startCtl(t *testing.T, env *testenv.Env, bin string) *ctlProcess {
	kubeconfig := env.AdminKubeconfig(t, controller.Name)
	probe, metrics, pprof := testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t)
	var logs bytes.Buffer
	var mu sync.Mutex
	cmd := exec.Command(bin, "--kubeconfig="+kubeconfig, "--leader-elect=true",
		"--leader-election-namespace="+ctlNamespace, "--gc-grace=5s", "--gc-period=1m",
		"--kube-api-qps=50", "--kube-api-burst=100",
		"--metrics-bind-address="+metrics, "--health-probe-bind-address="+probe, "--pprof-bind-address="+pprof)
	cmd.Env = append(os.Environ(), controllerEnv(t, env.Root)...)
	w := writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(b) })
	cmd.Stdout, cmd.Stderr = w, w
	started := time.Now()
	proc := testenv.StartProcess(t, cmd, 30*time.Second, func() {
		mu.Lock()
		defer mu.Unlock()
		t.Logf("podnet-controller log (tail):\n%s", testenv.Tail(logs.String(), 4000))
	})
	return &ctlProcess{proc: proc, metrics: "http://" + metrics + "/metrics", probe: "http://" + probe, pprof: "http://" + pprof, started: started}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

func httpGet(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), err
}

func (p *ctlProcess) scrape(t *testing.T) string {
	body, err := httpGet(p.metrics)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// waitLeaderReady polls, every 20 ms, until the binary's caches synced
// (/readyz) and it holds the lease, and returns how long it took.
func (p *ctlProcess) waitLeaderReady(t *testing.T) time.Duration {
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("podnet-controller not leader-ready after 10m")
		}
		if _, err := httpGet(p.probe + "/readyz"); err != nil {
			continue
		}
		m, err := httpGet(p.metrics)
		if err == nil && bench.Sum(m, "leader_election_master_status", `name="`+controller.Name+`"`) == 1 {
			return time.Since(p.started)
		}
	}
}

// waitIdle waits until the collector's sweeps have looked at least at want claims
// and both work queues are empty, and returns when.
func (p *ctlProcess) waitIdle(t *testing.T, want int) time.Duration {
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("podnet-controller not idle after 10m")
		}
		m := p.scrape(t)
		// Claims listed on start are looked at by the first sweep, and
		// only its candidates are queued.
		done := counter(t, m, "podnet_ipclaim_gc_swept_total")
		if done >= float64(want) && bench.Sum(m, "workqueue_depth") == 0 {
			return time.Since(p.started)
		}
	}
}

// apiRequests counts the requests the API server served on the
// resources only the controller touches while the bench is idle (pods,
// claims, profiles and Events; not Leases), by verb.
func apiRequests(m string) map[string]float64 {
	out := map[string]float64{}
	for _, res := range []string{"pods", "ipclaims", "networkprofiles", "events"} {
		for _, verb := range []string{"GET", "LIST", "WATCH", "CREATE", "UPDATE", "PATCH", "DELETE"} {
			out[verb] += bench.Sum(m, "apiserver_request_total", `resource="`+res+`"`, `verb="`+verb+`"`)
		}
	}
	return out
}

func sumDiff(after, before map[string]float64) (total float64) {
	for k, v := range after {
		total += v - before[k]
	}
	return total
}

// clientRequests is every request the binary itself sent, leases
// included.
func clientRequests(m string) float64 {
	r, w := bench.Requests(m)
	return r + w
}

func rssMiB(t *testing.T, pid int) (rss, hwm float64) {
	st, err := bench.ProcStatus(pid)
	if err != nil {
		t.Fatal(err)
	}
	return mib(st["VmRSS"]), mib(st["VmHWM"])
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// measureController starts the binary on the cluster as it is, measures
// start, steady state and a GC sweep, prints the figures and stops it.
func measureController(t *testing.T, env *testenv.Env, bin string, cl *ctlCluster, n int) ctlRun {
	m := &ctlMeasure{t: t, env: env, cl: cl, prefix: fmt.Sprintf("controller_%dpods_", n), run: ctlRun{pods: n}}
	m.start(bin)
	m.steady()
	saveHeap(t, m.proc, fmt.Sprintf("%dpods", n))
	m.sweep()
	fmt.Printf("BENCH %smachine_loadavg_1m %s load\n", m.prefix, bench.LoadAverage())
	m.proc.proc.Stop(t, syscall.SIGTERM, 30*time.Second)
	return m.run
}

// ctlMeasure is one size's measurement; each step keeps the metrics it
// ended on for the next to start from.
type ctlMeasure struct {
	t      *testing.T
	env    *testenv.Env
	cl     *ctlCluster
	proc   *ctlProcess
	prefix string
	run    ctlRun
	// The binary's own metrics and the API server's, at the last step.
	own, api string
}

func (m *ctlMeasure) printf(name, format string, v ...any) {
	fmt.Printf("BENCH "+m.prefix+name+" "+format+"\n", v...)
}

// start starts the binary and waits until it leads with synced caches,
// then until it has looked at every claim once.
func (m *ctlMeasure) start(bin string) {
	t := m.t
	claims := m.cl.podnetLive()
	before := m.env.Metrics(t)
	m.proc = startCtl(t, m.env, bin)
	ready := m.proc.waitLeaderReady(t)
	fmt.Fprintf(os.Stderr, "controller bench: leader-ready after %s\n", ready.Round(time.Millisecond))
	_, hwmReady := rssMiB(t, m.proc.pid())
	idle := m.proc.waitIdle(t, claims)
	m.own, m.api = m.proc.scrape(t), m.env.Metrics(t)
	m.run.readyMS = float64(ready) / float64(time.Millisecond)
	m.printf("pods", "%d pods", m.run.pods)
	m.printf("claims", "%d claims", claims)
	m.printf("ready", "%.0f ms", m.run.readyMS)
	m.printf("idle_after_start", "%.0f ms", float64(idle)/float64(time.Millisecond))
	m.printf("start_requests", "%.0f requests", sumDiff(apiRequests(m.api), apiRequests(before)))
	m.printf("start_client_requests_with_lease", "%.0f requests", clientRequests(m.own))
	m.printf("start_list_pods", "%.0f requests", listsOf(m.api, "pods")-listsOf(before, "pods"))
	m.printf("start_list_ipclaims", "%.0f requests", listsOf(m.api, "ipclaims")-listsOf(before, "ipclaims"))
	m.printf("peak_rss_at_ready", "%.1f MiB", hwmReady)
}

// steady watches the idle binary over a window that holds one periodic
// pass; it must have deleted no claim of a live pod.
func (m *ctlMeasure) steady() {
	t := m.t
	window := bench.Size(75*time.Second, 2*time.Second)
	time.Sleep(window)
	own, api := m.proc.scrape(t), m.env.Metrics(t)
	rss, _ := rssMiB(t, m.proc.pid())
	m.run.steadyRSS = rss
	m.printf("steady_rss", "%.1f MiB", rss)
	m.printf("steady_go_heap_inuse", "%.1f MiB", counter(t, own, "go_memstats_heap_inuse_bytes")/(1<<20))
	m.printf("steady_requests", "%.1f req/min", sumDiff(apiRequests(api), apiRequests(m.api))/window.Minutes())
	m.printf("steady_client_requests_with_lease", "%.1f req/min", (clientRequests(own)-clientRequests(m.own))/window.Minutes())
	if d := counter(t, own, "podnet_ipclaim_gc_deleted_total") + counter(t, own, "podnet_ipclaim_gc_forged_total"); d != 0 {
		t.Fatalf("the controller deleted %.0f claims of live pods", d)
	}
	m.own, m.api = own, api
}

// sweep deletes 10 % of the pods and waits until the binary collected
// their claims, and only theirs.
func (m *ctlMeasure) sweep() {
	t := m.t
	deleted, want := m.cl.sweep(t)
	fmt.Fprintf(os.Stderr, "controller bench: %d pods deleted\n", deleted)
	began := time.Now()
	collected := func() float64 { return counter(t, m.proc.scrape(t), "podnet_ipclaim_gc_deleted_total") }
	for deadline := time.Now().Add(10 * time.Minute); collected() < float64(want); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("claims collected: %.0f of %d", collected(), want)
		}
	}
	took := time.Since(began)
	m.proc.waitIdle(t, 0)
	own, api := m.proc.scrape(t), m.env.Metrics(t)
	checkClaims(t, m.cl)
	rss, hwm := rssMiB(t, m.proc.pid())
	m.run.peakRSS = hwm
	m.printf("gc_sweep_pods", "%d pods", deleted)
	m.printf("gc_sweep_claims", "%d claims", want)
	m.printf("gc_sweep_collected_after_delete", "%.1f s", took.Seconds())
	// The API server also counted the bench's own pod deletions.
	m.printf("gc_sweep_requests", "%.2f req/claim", (sumDiff(apiRequests(api), apiRequests(m.api))-float64(deleted))/float64(want))
	m.printf("gc_sweep_client_requests_with_lease", "%.2f req/claim", (clientRequests(own)-clientRequests(m.own))/float64(want))
	m.printf("rss_after_gc_sweep", "%.1f MiB", rss)
	m.printf("peak_rss", "%.1f MiB", hwm)
}

// checkClaims lists the claims (in pages) and fails unless exactly the
// live podnet pods' remain.
func checkClaims(t *testing.T, cl *ctlCluster) {
	n, opts := 0, &client.ListOptions{Limit: 5000}
	for {
		var list metav1.PartialObjectMetadataList
		list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("IPClaimList"))
		if err := cl.c.List(context.Background(), &list, opts); err != nil {
			t.Fatal(err)
		}
		n += len(list.Items)
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	if n != cl.podnetLive() {
		t.Fatalf("%d claims left, want %d (one per live podnet pod)", n, cl.podnetLive())
	}
}

// counter is an unlabelled metric of the binary's; a missing one fails
// the test rather than reading as zero.
func counter(t *testing.T, m, name string) float64 {
	v, err := bench.Gauge(m, name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func listsOf(m, resource string) float64 {
	return bench.Sum(m, "apiserver_request_total", `resource="`+resource+`"`, `verb="LIST"`)
}

func (p *ctlProcess) pid() int { return p.proc.Cmd.Process.Pid }

// saveHeap keeps the binary's heap profile in PODNET_BENCH_HEAP_DIR, if
// set (go tool pprof <dir>/controller-heap-<size>.pprof).
func saveHeap(t *testing.T, p *ctlProcess, size string) {
	dir := os.Getenv("PODNET_BENCH_HEAP_DIR")
	if dir == "" {
		return
	}
	heap, err := httpGet(p.pprof + "/debug/pprof/heap")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "controller-heap-"+size+".pprof"), []byte(heap), 0o644); err != nil {
		t.Fatal(err)
	}
}

// controllerEnv is the environment deploy/podnet/controller.yaml gives
// the controller container, GOMEMLIMIT resolved from its memory limit as
// the kubelet does; GOGC and GOMEMLIMIT of the test's own environment do
// not leak into it.
func controllerEnv(t *testing.T, root string) []string {
	environ, err := bench.DeploymentEnv(filepath.Join(root, "deploy", "podnet", "controller.yaml"), controller.Name)
	if err != nil {
		t.Fatal(err)
	}
	return environ
}
