package macpool_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/claims"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/pkg/macpool"
	"podnet.io/podnet/test/testenv"
)

func init() { ctrllog.SetLogger(logr.Discard()) }

const testNode = "node-a"

var podSeq atomic.Int64

// newAllocator is one agent's allocator: its own client and its own
// informer cache of MACClaims.
func newAllocator(t *testing.T, env *testenv.Env) *macpool.Allocator {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	ca, err := cache.New(cfg, cache.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatalf("cache: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	// Indexed by pod, as the agent's cache is.
	if err := claims.IndexByPod(ctx, ca, &v1alpha1.MACClaim{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.GetInformer(ctx, &v1alpha1.MACClaim{}); err != nil {
		t.Fatalf("informer: %v", err)
	}
	go func() { defer close(done); _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	return macpool.New(c, ca).WithPodIndex()
}

func createNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

func createPod(t *testing.T, c client.Client, namespace string) ipam.Owner {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("p%d", podSeq.Add(1))},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	if err := c.Create(context.Background(), pod); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	return ipam.Owner{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), Node: testNode}
}

func macClaims(t *testing.T, c client.Client, labels client.MatchingLabels) []v1alpha1.MACClaim {
	t.Helper()
	var list v1alpha1.MACClaimList
	if err := c.List(context.Background(), &list, labels); err != nil {
		t.Fatalf("list MACClaims: %v", err)
	}
	return list.Items
}

// TestIntegrationMACPool runs allocators against a real API server.
func TestIntegrationMACPool(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	c := env.Client
	ctx := context.Background()

	t.Run("ConcurrentAllocatorsNeverShareAMAC", func(t *testing.T) {
		// Two agents, 12 pods each, on two networks whose ranges (24 MACs
		// each) overlap on 02:00:00:00:01:08-17: the 24 MACs handed out
		// are all different.
		createNamespace(t, c, "conc")
		ranges := map[string]v1alpha1.ApprovedMACRange{
			"left":  {Start: "02:00:00:00:01:00", End: "02:00:00:00:01:17"},
			"right": {Start: "02:00:00:00:01:08", End: "02:00:00:00:01:1f"},
		}
		allocs := []*macpool.Allocator{newAllocator(t, env), newAllocator(t, env)}
		var mu sync.Mutex
		got := map[string]string{}
		var wg sync.WaitGroup
		errs := make(chan error, 24)
		for i := range 24 {
			o := createPod(t, c, "conc")
			network := []string{"left", "right"}[i%2]
			wg.Go(func() {
				mac, err := ensureRetrying(ctx, allocs[i%2], o, network, "net1", "", ranges[network])
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if prev, dup := got[mac.String()]; dup {
					errs <- fmt.Errorf("mac %s handed to %s and %s", mac, prev, o)
				}
				got[mac.String()] = o.String()
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if len(got) != 24 {
			t.Fatalf("got %d distinct MACs, want 24", len(got))
		}
		for mac := range got {
			if !strings.HasPrefix(mac, "02:00:00:00:01:") {
				t.Errorf("mac %s is outside both ranges", mac)
			}
		}
	})

	t.Run("ExhaustedRangeNamesNetworkAndRange", func(t *testing.T) {
		createNamespace(t, c, "full")
		r := v1alpha1.ApprovedMACRange{Start: "02:00:00:00:02:00", End: "02:00:00:00:02:02"}
		a := newAllocator(t, env)
		held := map[string]bool{}
		for range 3 {
			mac, err := a.Ensure(ctx, createPod(t, c, "full"), "small", "net1", "", r)
			if err != nil {
				t.Fatalf("ensure: %v", err)
			}
			held[mac.String()] = true
		}
		_, err := a.Ensure(ctx, createPod(t, c, "full"), "small", "net1", "", r)
		var full *macpool.ExhaustedError
		if !errors.As(err, &full) || !full.Whole {
			t.Fatalf("fourth MAC of a range of 3: got %v, want a whole-range ExhaustedError", err)
		}
		for _, want := range []string{`network "small"`, "02:00:00:00:02:00-02:00:00:00:02:02", "all 3 MACs"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if len(held) != 3 {
			t.Errorf("held %v, want 3 distinct MACs", held)
		}
	})

	t.Run("EnsureIsIdempotentAndReleaseFrees", func(t *testing.T) {
		createNamespace(t, c, "idem")
		r := v1alpha1.ApprovedMACRange{Start: "02:00:00:00:03:00", End: "02:00:00:00:03:ff", MaxPerNamespace: 4}
		a := newAllocator(t, env)
		o := createPod(t, c, "idem")
		first, err := a.Ensure(ctx, o, "idem", "net1", "", r)
		if err != nil {
			t.Fatal(err)
		}
		again, err := newAllocator(t, env).Ensure(ctx, o, "idem", "net1", "", r)
		if err != nil || again.String() != first.String() {
			t.Fatalf("second Ensure (another allocator) = %v, %v; want %s", again, err, first)
		}
		if n := len(macClaims(t, c, client.MatchingLabels{v1alpha1.PodUIDLabel: o.UID})); n != 2 {
			t.Fatalf("pod holds %d claims, want 2 (its MAC and a quota slot)", n)
		}
		if err := a.Release(ctx, o.UID, "", ""); err != nil {
			t.Fatal(err)
		}
		if left := macClaims(t, c, client.MatchingLabels{v1alpha1.PodUIDLabel: o.UID}); len(left) != 0 {
			t.Fatalf("claims left after Release: %v", left)
		}
	})

	t.Run("QuotaPerNamespace", func(t *testing.T) {
		// A quota of 2: 6 pods of one namespace asking at once through
		// two allocators get 2 MACs, the rest QuotaExceededError; another
		// namespace is not affected.
		createNamespace(t, c, "quota")
		createNamespace(t, c, "other")
		r := v1alpha1.ApprovedMACRange{Start: "02:00:00:00:04:00", End: "02:00:00:00:04:ff", MaxPerNamespace: 2}
		allocs := []*macpool.Allocator{newAllocator(t, env), newAllocator(t, env)}
		var ok, over atomic.Int32
		var wg sync.WaitGroup
		for i := range 6 {
			o := createPod(t, c, "quota")
			wg.Go(func() {
				_, err := allocs[i%2].Ensure(ctx, o, "q", "net1", "", r)
				var q *macpool.QuotaExceededError
				switch {
				case err == nil:
					ok.Add(1)
				case errors.As(err, &q):
					over.Add(1)
				default:
					t.Errorf("ensure: %v", err)
				}
			})
		}
		wg.Wait()
		if ok.Load() != 2 || over.Load() != 4 {
			t.Fatalf("%d pods got a MAC and %d were over quota; want 2 and 4", ok.Load(), over.Load())
		}
		macs := 0
		for _, cl := range macClaims(t, c, client.MatchingLabels{v1alpha1.NamespaceLabel: "quota"}) {
			if cl.Spec.Slot == nil {
				macs++
			}
		}
		if macs != 2 {
			t.Fatalf("namespace holds %d MACs, want 2", macs)
		}
		if _, err := allocs[0].Ensure(ctx, createPod(t, c, "other"), "q", "net1", "", r); err != nil {
			t.Fatalf("another namespace: %v", err)
		}
	})

	t.Run("StaticMACHeldByAnotherNamespaceHidesThePod", func(t *testing.T) {
		createNamespace(t, c, "tenant-a")
		createNamespace(t, c, "tenant-b")
		r := v1alpha1.ApprovedMACRange{Start: "02:00:00:00:05:00", End: "02:00:00:00:05:0f"}
		a := newAllocator(t, env)
		holder := createPod(t, c, "tenant-a")
		if _, err := a.Ensure(ctx, holder, "st", "net1", "02:00:00:00:05:07", r); err != nil {
			t.Fatal(err)
		}
		_, err := a.Ensure(ctx, createPod(t, c, "tenant-b"), "st", "net1", "02:00:00:00:05:07", r)
		var conflict *macpool.ConflictError
		if !errors.As(err, &conflict) {
			t.Fatalf("got %v, want a ConflictError", err)
		}
		if strings.Contains(err.Error(), holder.Name) || strings.Contains(err.Error(), "tenant-a") {
			t.Errorf("error %q names the other tenant's pod or namespace", err)
		}
		if !strings.Contains(err.Error(), "a pod of another namespace") || !strings.Contains(err.Error(), "02-00-00-00-05-07") {
			t.Errorf("error %q does not say a pod of another namespace holds MACClaim 02-00-00-00-05-07", err)
		}
		_, err = a.Ensure(ctx, createPod(t, c, "tenant-a"), "st", "net1", "02:00:00:00:05:07", r)
		if err == nil || !strings.Contains(err.Error(), "pod "+holder.Name) {
			t.Errorf("same namespace: got %v, want the holder named", err)
		}
		_, err = a.Ensure(ctx, createPod(t, c, "tenant-b"), "st", "net1", "02:00:00:00:06:00", r)
		if err == nil || !strings.Contains(err.Error(), "outside the macRange") {
			t.Errorf("static MAC outside the range: got %v", err)
		}
	})
}

// ensureRetrying retries while the range is only nearly exhausted, as the
// agent does after its backoff.
func ensureRetrying(ctx context.Context, a *macpool.Allocator, o ipam.Owner, network, iface, static string, r v1alpha1.ApprovedMACRange) (net.HardwareAddr, error) {
	for range 20 {
		mac, err := a.Ensure(ctx, o, network, iface, static, r)
		var full *macpool.ExhaustedError
		if !errors.As(err, &full) || full.Whole {
			return mac, err
		}
	}
	return a.Ensure(ctx, o, network, iface, static, r)
}
