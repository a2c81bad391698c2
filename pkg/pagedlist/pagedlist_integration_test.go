package pagedlist

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"podnet.io/podnet/test/bench"
	"podnet.io/podnet/test/testenv"
)

// TestInformerLoadsARealClusterInPages runs an informer of namespace
// metadata through NewInformer against a real API server holding more
// namespaces than a page: the cache ends up with every namespace,
// trimmed, and the API server either streamed the initial list or served
// it in pages of DefaultPageSize, never in one piece.
func TestInformerLoadsARealClusterInPages(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 1000
	const n = DefaultPageSize + 20
	createNamespaces(t, env, n)

	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	namespaces := mc.Resource(corev1.SchemeGroupVersion.WithResource("namespaces"))
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return namespaces.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return namespaces.Watch(ctx, o)
		},
	}
	inf := NewInformer(lw, &metav1.PartialObjectMetadata{}, 0, toolscache.Indexers{})
	if err := inf.SetTransform(func(obj any) (any, error) {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
			m.Annotations, m.ManagedFields = nil, nil
		}
		return obj, nil
	}); err != nil {
		t.Fatal(err)
	}
	before := env.Metrics(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); inf.RunWithContext(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	after := env.Metrics(t)

	ours := 0
	for _, obj := range inf.GetStore().List() {
		m := obj.(*metav1.PartialObjectMetadata)
		if len(m.Annotations) != 0 || len(m.ManagedFields) != 0 {
			t.Fatalf("namespace %s cached untrimmed: %+v", m.Name, m.ObjectMeta)
		}
		if strings.HasPrefix(m.Name, "paged-") {
			ours++
		}
	}
	if ours != n {
		t.Fatalf("cache holds %d of the %d namespaces", ours, n)
	}
	lists := bench.Sum(after, "apiserver_request_total", `verb="LIST"`, `resource="namespaces"`) -
		bench.Sum(before, "apiserver_request_total", `verb="LIST"`, `resource="namespaces"`)
	total := len(inf.GetStore().List())
	pages := (total + DefaultPageSize - 1) / DefaultPageSize
	// Zero LISTs: the server streamed the initial list (WatchList).
	if lists != 0 && int(lists) != pages {
		t.Fatalf("the API server served %v LISTs of namespaces for %d namespaces, want %d pages (or 0: streamed)", lists, total, pages)
	}
	t.Logf("%d namespaces loaded with %v LIST requests", total, lists)
}

func createNamespaces(t *testing.T, env *testenv.Env, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
					Name:        fmt.Sprintf("paged-%04d", i),
					Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 300)},
				}}
				if err := env.Client.Create(context.Background(), ns); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
