//go:build bench

package webhook_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/pkg/certs"
	"podnet.io/podnet/test/bench"
	"podnet.io/podnet/test/testenv"
)

// fastClient is a client without client-go's default 5 QPS limit, which
// would otherwise be what a latency figure measures.
func fastClient(t testing.TB, env *testenv.Env) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 100000, 100000
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// parallel runs f(i) for i in [0,n) on `workers` goroutines and returns
// each call's duration.
func parallel(t testing.TB, n, workers int, f func(i int) error) []time.Duration {
	t.Helper()
	took := make([]time.Duration, n)
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				start := time.Now()
				err := f(i)
				took[i] = time.Since(start)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	return took
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
}

// apiserverScrape returns the API server's /metrics.
func apiserverScrape(t testing.TB, env *testenv.Env) string {
	t.Helper()
	return env.Metrics(t)
}

// TestBenchWebhookMemory runs the real podnet-webhook binary against an API
// server holding P NetworkProfiles and 5·P opted-in namespaces, at P = 100
// and P = 1,000, with the environment its Deployment gives it (GOMEMLIMIT
// from the container's memory limit), and reads its resident memory, split
// into anonymous pages and the binary's file pages, its heap and time to
// ready once its cache has synced and it has admitted pods; then how each
// grows with the cluster (the ratio between the two sizes).
func TestBenchWebhookMemory(t *testing.T) {
	small := measureFootprint(t, bench.Size(100, 2), bench.Size(500, 10))
	large := measureFootprint(t, bench.Size(1000, 4), bench.Size(5000, 20))
	for _, r := range []struct {
		name         string
		small, large float64
	}{
		{"peak_rss", small.peakRSS, large.peakRSS},
		{"rss", small.rss, large.rss},
		{"rss_anon", small.anon, large.anon},
		{"rss_file", small.file, large.file},
		{"go_heap_inuse", small.heap, large.heap},
		{"ready_after_start", small.ready, large.ready},
	} {
		fmt.Printf("BENCH webhook_%s_growth_1000_over_100_profiles %.3f ratio\n", r.name, r.large/r.small)
	}
}

// footprint is what one size costs the webhook: MiB and milliseconds.
type footprint struct {
	peakRSS, rss, anon, file, heap, ready float64
}

// measureFootprint fills a fresh API server with `profiles` profiles and
// `namespaces` opted-in namespaces, starts the binary, admits pods
// through it and prints and returns its footprint.
func measureFootprint(t *testing.T, profiles, namespaces int) footprint {
	var fp footprint
	t.Run(fmt.Sprintf("%dprofiles", profiles), func(t *testing.T) {
		root := testenv.RepoRoot(t)
		// A fresh API server of its own: the footprint is measured against exactly the objects it fills in.
		env := testenv.Start(t, testenv.Options{WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(root, "deploy", "webhook")},
		}})
		c := fastClient(t, env)
		fillCluster(t, c, profiles, namespaces)
		size := fmt.Sprintf("%d_profiles_%d_namespaces", profiles, namespaces)
		environ := deploymentEnv(t, env.Root)
		fp = runFootprint(t, env, c, size, namespaces, environ)
		// What the Deployment's settings buy: the same binary with the Go
		// runtime's defaults, on the same API server.
		runFootprint(t, env, c, "go_defaults_"+size, namespaces, []string{"GOGC=", "GOMEMLIMIT="})
	})
	if fp.ready == 0 {
		t.FailNow()
	}
	return fp
}

// runFootprint starts the binary as its Deployment runs it, waits until it
// is ready, admits pods through it and prints its footprint.
func runFootprint(t *testing.T, env *testenv.Env, c client.Client, size string, namespaces int, environ []string) footprint {
	dir := t.TempDir()
	key, pub := filepath.Join(dir, "approval.key"), filepath.Join(dir, "approval.pub")
	if err := certs.GenerateKeyPair(key, pub); err != nil {
		t.Fatal(err)
	}
	// PODNET_BENCH_HEAP_DIR=<dir> keeps the binary's heap profile
	// (go tool pprof <dir>/heap-<size>.pprof) to see where memory goes.
	heapDir := os.Getenv("PODNET_BENCH_HEAP_DIR")
	var extra []string
	pprofAddr := testenv.FreeAddr(t)
	if heapDir != "" {
		extra = append(extra, "--pprof-bind-address="+pprofAddr)
	}
	before := apiserverScrape(t, env)
	proc := startBinaryEnv(t, env, key, "", environ, extra...)
	rss := sampleRSS(t, proc.cmd.Process.Pid)
	hs := &harness{probeURL: proc.probe}
	ctx := context.Background()
	// Polled often: the poll interval is part of the figure.
	deadline := time.Now().Add(120 * time.Second)
	for {
		if _, err := hs.get(ctx, hs.probeURL+"/readyz"); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("podnet-webhook not ready: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	ready := time.Since(proc.started)
	// Whether the peak comes from the initial sync or from admissions.
	atReady := rss.peak()
	// How the informers loaded the cluster: plain LISTs or streaming
	// watches that send the initial objects as events.
	after := apiserverScrape(t, env)
	for _, verb := range []string{"LIST", "WATCH"} {
		for _, res := range []string{"namespaces", "networkprofiles"} {
			labels := []string{`verb="` + verb + `"`, `resource="` + res + `"`}
			n := bench.Sum(after, "apiserver_request_total", labels...) - bench.Sum(before, "apiserver_request_total", labels...)
			fmt.Printf("BENCH webhook_initial_%s_%s_%s %.0f requests\n", strings.ToLower(verb), res, size, n)
		}
	}
	took := admitPods(t, c, pub, size, namespaces)
	body, err := hs.get(ctx, proc.metrics)
	if err != nil {
		t.Fatal(err)
	}
	peak := rss.stop()
	st, err := bench.ProcStatus(proc.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	fp := footprint{
		peakRSS: mib(st["VmHWM"]),
		rss:     mib(st["VmRSS"]),
		anon:    mib(st["RssAnon"]),
		file:    mib(st["RssFile"]),
		heap:    gauge(t, body, "go_memstats_heap_inuse_bytes") / (1 << 20),
		ready:   float64(ready) / float64(time.Millisecond),
	}
	if heapDir != "" {
		heap, err := hs.get(ctx, "http://"+pprofAddr+"/debug/pprof/heap")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(heapDir, "heap-"+size+".pprof"), []byte(heap), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	printFootprint(t, size, fp, atReady, peak, body, environ)
	// The collector's CPU is what a lower GOGC costs.
	fmt.Printf("BENCH webhook_cpu_%s %.2f s\n", size, gauge(t, body, "process_cpu_seconds_total"))
	fmt.Printf("BENCH webhook_pod_create_p50_%s %s ms\n", size, ms(bench.Percentile(took, 0.50)))
	fmt.Printf("BENCH webhook_pod_create_p99_%s %s ms\n", size, ms(bench.Percentile(took, 0.99)))
	fmt.Printf("BENCH webhook_bench_machine_loadavg_1m %s load\n", bench.LoadAverage())
	proc.proc.Stop(t, syscall.SIGTERM, 10*time.Second)
	return fp
}

// admitPods creates pods through the binary and checks that every one is
// approved and signed.
func admitPods(t *testing.T, c client.Client, pub, prefix string, namespaces int) []time.Duration {
	verifier, err := certs.LoadVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	pods := bench.Size(500, 10)
	return parallel(t, pods, 50, func(i int) error {
		ns := fmt.Sprintf("ns-%04d", i*7%namespaces)
		p := pod(ns, fmt.Sprintf("%s-%d", strings.ReplaceAll(prefix, "_", "-"), i), map[string]string{v1alpha1.NetworksAnnotation: `[{"name":"net1","vlan":120},{"name":"net3"}]`})
		if err := c.Create(context.Background(), p); err != nil {
			return err
		}
		if _, err := approval.VerifyPod(verifier, p); err != nil {
			return fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		return nil
	})
}

// printFootprint prints one size's figures: resident memory at its peak,
// at ready and at the end, each split into anonymous and file pages, and
// the Go runtime's own account of its memory.
func printFootprint(t *testing.T, size string, fp footprint, atReady, peak rssSample, metrics string, environ []string) {
	fmt.Printf("BENCH webhook_peak_rss_%s %.1f MiB\n", size, fp.peakRSS)
	fmt.Printf("BENCH webhook_rss_%s %.1f MiB\n", size, fp.rss)
	fmt.Printf("BENCH webhook_peak_over_steady_rss_%s %.1f MiB\n", size, fp.peakRSS-fp.rss)
	fmt.Printf("BENCH webhook_peak_rss_at_ready_%s %.1f MiB\n", size, mib(atReady.hwm))
	// The sampled peak misses what lasts less than a sampling period, so
	// it may lie a little under VmHWM; its split is what matters.
	fmt.Printf("BENCH webhook_sampled_peak_rss_anon_%s %.1f MiB\n", size, mib(peak.anon))
	fmt.Printf("BENCH webhook_sampled_peak_rss_file_%s %.1f MiB\n", size, mib(peak.file))
	fmt.Printf("BENCH webhook_rss_anon_%s %.1f MiB\n", size, fp.anon)
	fmt.Printf("BENCH webhook_rss_file_backed_%s %.1f MiB\n", size, fp.file)
	fmt.Printf("BENCH webhook_go_heap_inuse_%s %.1f MiB\n", size, fp.heap)
	// heap_sys − heap_released is the heap the runtime still holds from
	// the kernel; sys is everything it obtained (heap, stacks, metadata).
	for _, g := range []string{"go_memstats_heap_idle_bytes", "go_memstats_heap_released_bytes", "go_memstats_stack_inuse_bytes", "go_memstats_sys_bytes", "go_memstats_next_gc_bytes"} {
		fmt.Printf("BENCH webhook_%s_%s %.1f MiB\n", strings.TrimSuffix(strings.TrimPrefix(g, "go_memstats_"), "_bytes"), size, gauge(t, metrics, g)/(1<<20))
	}
	fmt.Printf("BENCH webhook_ready_after_start_%s %.0f ms\n", size, fp.ready)
	fmt.Printf("BENCH webhook_environment_%s %q env\n", size, strings.Join(environ, " "))
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// rssSample is one reading of /proc/<pid>/status, in KiB.
type rssSample struct{ rss, anon, file, hwm int64 }

// rssSampler reads a process's resident memory every few milliseconds and
// keeps the largest reading, to split the peak into anonymous and file
// pages (VmHWM has no split).
type rssSampler struct {
	mu   sync.Mutex
	max  rssSample
	done chan struct{}
	wg   sync.WaitGroup
}

func sampleRSS(t *testing.T, pid int) *rssSampler {
	s := &rssSampler{done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if st, err := bench.ProcStatus(pid); err == nil {
				s.mu.Lock()
				if st["VmRSS"] > s.max.rss {
					s.max = rssSample{rss: st["VmRSS"], anon: st["RssAnon"], file: st["RssFile"]}
				}
				s.max.hwm = st["VmHWM"]
				s.mu.Unlock()
			}
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { _ = s.stop() })
	return s
}

func (s *rssSampler) peak() rssSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max
}

// stop ends the sampling (once) and returns the largest reading.
func (s *rssSampler) stop() rssSample {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.wg.Wait()
	return s.peak()
}

// deploymentEnv is the environment deploy/podnet/webhook.yaml gives the
// webhook container, with a resourceFieldRef to limits.memory resolved
// the way the kubelet does (bytes), so that the bench runs the binary with
// the Deployment's GOMEMLIMIT and GOGC.
func deploymentEnv(t *testing.T, root string) []string {
	environ, err := bench.DeploymentEnv(filepath.Join(root, "deploy", "podnet", "webhook.yaml"), "podnet-webhook")
	if err != nil {
		t.Fatal(err)
	}
	return environ
}

// fillCluster creates the profiles and namespaces: profile i offers four
// networks to namespaces labelled tenant=t<i>; namespace j is tenant
// t<j%profiles>, so every namespace has a profile.
func fillCluster(t testing.TB, c client.Client, profiles, namespaces int) {
	t.Helper()
	ctx := context.Background()
	parallel(t, profiles, 50, func(i int) error {
		p := &v1alpha1.NetworkProfile{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("profile-%04d", i)},
			Spec: v1alpha1.NetworkProfileSpec{
				NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": fmt.Sprintf("t%d", i)}},
			},
		}
		for n := range 4 {
			p.Spec.Networks = append(p.Spec.Networks, v1alpha1.Network{
				Name: fmt.Sprintf("net%d", n),
				Bridge: &v1alpha1.BridgeNetwork{
					Name: fmt.Sprintf("pnbr%d", n),
					VLAN: &v1alpha1.VLANPolicy{Default: ptr.To[int32](100), Allowed: []string{"100-199", "300-399"}},
				},
				MTU:    &v1alpha1.MTURange{Default: ptr.To[int32](1500), Max: ptr.To[int32](9000)},
				IPAM:   &v1alpha1.IPAM{Pools: []string{fmt.Sprintf("10.%d.%d.0/24", i/250, i%250), "fd00::/64"}, AllowStatic: true},
				Routes: &v1alpha1.RoutePolicy{Allowed: []string{"10.0.0.0/8"}},
			})
		}
		return c.Create(ctx, p)
	})
	parallel(t, namespaces, 50, func(j int) error {
		return c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("ns-%04d", j),
			Labels: map[string]string{v1alpha1.EnabledLabel: "true", "tenant": fmt.Sprintf("t%d", j%profiles)},
			// What `kubectl apply` leaves on real namespaces.
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 300)},
		}})
	})
}

// gauge is the value of an unlabelled metric in a Prometheus text body.
func gauge(t testing.TB, body, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no %s in the metrics", name)
	return 0
}
