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
// server holding 1,000 NetworkProfiles and 5,000 opted-in namespaces, and
// reads its resident memory once its cache has synced and it has admitted
// pods.
func TestBenchWebhookMemory(t *testing.T) {
	const profiles, namespaces = 1000, 5000
	root := testenv.RepoRoot(t)
	env := testenv.Start(t, testenv.Options{WebhookInstallOptions: envtest.WebhookInstallOptions{
		Paths: []string{filepath.Join(root, "deploy", "webhook")},
	}})
	c := fastClient(t, env)
	ctx := context.Background()

	// Profile i offers four networks to namespaces labelled tenant=t<i%1000>;
	// namespace j is tenant t<j%1000>, so every namespace has a profile.
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

	dir := t.TempDir()
	key, pub := filepath.Join(dir, "approval.key"), filepath.Join(dir, "approval.pub")
	if err := certs.GenerateKeyPair(key, pub); err != nil {
		t.Fatal(err)
	}
	proc := startBinary(t, env, key, "")
	hs := &harness{probeURL: proc.probe}
	testenv.Eventually(t, 120*time.Second, "podnet-webhook ready", func(ctx context.Context) error {
		_, err := hs.get(ctx, hs.probeURL+"/readyz")
		return err
	})
	ready := time.Since(proc.started)

	// Admit pods through the binary: every one is approved and signed.
	verifier, err := certs.LoadVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	const pods = 500
	took := parallel(t, pods, 50, func(i int) error {
		ns := fmt.Sprintf("ns-%04d", i*7%namespaces)
		p := pod(ns, fmt.Sprintf("p%d", i), map[string]string{v1alpha1.NetworksAnnotation: `[{"name":"net1","vlan":320},{"name":"net3"}]`})
		if err := c.Create(ctx, p); err != nil {
			return err
		}
		if _, err := approval.VerifyPod(verifier, p); err != nil {
			return fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		return nil
	})
	rss, hwm := procStatus(t, proc.cmd.Process.Pid, "VmRSS"), procStatus(t, proc.cmd.Process.Pid, "VmHWM")
	body, err := hs.get(ctx, proc.metrics)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("BENCH webhook_go_heap_inuse_1000_profiles_5000_namespaces %.1f MiB\n", gauge(t, body, "go_memstats_heap_inuse_bytes")/(1<<20))
	fmt.Printf("BENCH webhook_ready_after_start_1000_profiles_5000_namespaces %s ms\n", ms(ready))
	fmt.Printf("BENCH webhook_rss_1000_profiles_5000_namespaces %.1f MiB\n", float64(rss)/1024)
	fmt.Printf("BENCH webhook_peak_rss_1000_profiles_5000_namespaces %.1f MiB\n", float64(hwm)/1024)
	fmt.Printf("BENCH webhook_rss_goal_ratio %.3f ratio\n", float64(rss)/1024/64)
	fmt.Printf("BENCH webhook_pod_create_p50_1000_profiles %s ms\n", ms(bench.Percentile(took, 0.50)))
	fmt.Printf("BENCH webhook_pod_create_p99_1000_profiles %s ms\n", ms(bench.Percentile(took, 0.99)))
	fmt.Printf("BENCH webhook_bench_machine_loadavg_1m %s load\n", bench.LoadAverage())
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
