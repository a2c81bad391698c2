//go:build bench

package webhook_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/certs"
	"podnet.io/podnet/pkg/approval"
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
	rc, err := rest.RESTClientFor(restConfigForRaw(env.Config))
	if err != nil {
		t.Fatal(err)
	}
	body, err := rc.Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

func restConfigForRaw(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	return c
}

// TestBenchWebhookMemory runs the real podnet-webhook binary against an API
// server holding P NetworkProfiles and 5·P opted-in namespaces, at P = 100
// and P = 1,000, and reads its resident memory, heap and time to ready once
// its cache has synced and it has admitted pods; then how each grows with
// the cluster (the ratio between the two sizes).
func TestBenchWebhookMemory(t *testing.T) {
	small := measureFootprint(t, 100, 500)
	large := measureFootprint(t, 1000, 5000)
	for _, r := range []struct {
		name         string
		small, large float64
	}{
		{"peak_rss", small.peakRSS, large.peakRSS},
		{"rss", small.rss, large.rss},
		{"go_heap_inuse", small.heap, large.heap},
		{"ready_after_start", small.ready, large.ready},
	} {
		fmt.Printf("BENCH webhook_%s_growth_1000_over_100_profiles %.3f ratio\n", r.name, r.large/r.small)
	}
}

// footprint is what one size costs the webhook: MiB and milliseconds.
type footprint struct {
	peakRSS, rss, heap, ready float64
}

// measureFootprint fills a fresh API server with `profiles` profiles and
// `namespaces` opted-in namespaces, starts the binary, admits pods
// through it and prints and returns its footprint.
func measureFootprint(t *testing.T, profiles, namespaces int) footprint {
	var fp footprint
	t.Run(fmt.Sprintf("%dprofiles", profiles), func(t *testing.T) {
		root := testenv.RepoRoot(t)
		env := testenv.Start(t, testenv.Options{WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(root, "deploy", "webhook")},
		}})
		c := fastClient(t, env)
		fillCluster(t, c, profiles, namespaces)

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
		proc := startBinary(t, env, key, "", extra...)
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
		pid := proc.cmd.Process.Pid
		// Whether the peak comes from the initial sync or from admissions.
		peakAtReady := float64(procStatus(t, pid, "VmHWM")) / 1024

		// Admit pods through the binary: every one is approved and signed.
		verifier, err := certs.LoadVerifier(pub)
		if err != nil {
			t.Fatal(err)
		}
		const pods = 500
		took := parallel(t, pods, 50, func(i int) error {
			ns := fmt.Sprintf("ns-%04d", i*7%namespaces)
			p := pod(ns, fmt.Sprintf("p%d", i), map[string]string{v1alpha1.NetworksAnnotation: `[{"name":"net1","vlan":120},{"name":"net3"}]`})
			if err := c.Create(ctx, p); err != nil {
				return err
			}
			if _, err := approval.VerifyPod(verifier, p); err != nil {
				return fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
			}
			return nil
		})
		body, err := hs.get(ctx, proc.metrics)
		if err != nil {
			t.Fatal(err)
		}
		fp = footprint{
			peakRSS: float64(procStatus(t, pid, "VmHWM")) / 1024,
			rss:     float64(procStatus(t, pid, "VmRSS")) / 1024,
			heap:    gauge(t, body, "go_memstats_heap_inuse_bytes") / (1 << 20),
			ready:   float64(ready) / float64(time.Millisecond),
		}
		size := fmt.Sprintf("%d_profiles_%d_namespaces", profiles, namespaces)
		if heapDir != "" {
			heap, err := hs.get(ctx, "http://"+pprofAddr+"/debug/pprof/heap")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(heapDir, "heap-"+size+".pprof"), []byte(heap), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Printf("BENCH webhook_peak_rss_%s %.1f MiB\n", size, fp.peakRSS)
		fmt.Printf("BENCH webhook_rss_%s %.1f MiB\n", size, fp.rss)
		fmt.Printf("BENCH webhook_peak_over_steady_rss_%s %.1f MiB\n", size, fp.peakRSS-fp.rss)
		fmt.Printf("BENCH webhook_peak_rss_at_ready_%s %.1f MiB\n", size, peakAtReady)
		fmt.Printf("BENCH webhook_rss_file_backed_%s %.1f MiB\n", size, float64(procStatus(t, pid, "RssFile"))/1024)
		fmt.Printf("BENCH webhook_go_heap_inuse_%s %.1f MiB\n", size, fp.heap)
		fmt.Printf("BENCH webhook_ready_after_start_%s %.0f ms\n", size, fp.ready)
		fmt.Printf("BENCH webhook_pod_create_p50_%s %s ms\n", size, ms(bench.Percentile(took, 0.50)))
		fmt.Printf("BENCH webhook_pod_create_p99_%s %s ms\n", size, ms(bench.Percentile(took, 0.99)))
		fmt.Printf("BENCH webhook_bench_machine_loadavg_1m %s load\n", bench.LoadAverage())
	})
	if fp.ready == 0 {
		t.FailNow()
	}
	return fp
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

// procStatus reads a kB field of /proc/<pid>/status.
func procStatus(t testing.TB, pid int, field string) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatalf("%s: %v", field, err)
			}
			return kb
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
