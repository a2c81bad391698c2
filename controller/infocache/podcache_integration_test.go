package infocache

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/pagedlist"
	"podnet.io/podnet/test/bench"
	"podnet.io/podnet/test/testenv"
)

// TestIntegrationPodCache: against a real API server, the pod cache lists
// every pod in pages of the size it is given (or, where the server
// streams the initial list, in none), holds for each the PodInfo the pod
// itself reduces to, follows creations by watch, and hands each deletion
// to its deletion sources.
func TestIntegrationPodCache(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	const n = 2*pagedlist.DefaultPageSize + 10
	for i := range n {
		approval := ""
		if i%3 == 0 {
			approval = approval3
		}
		if err := env.Client.Create(ctx, testPod(fmt.Sprintf("p-%04d", i), approval)); err != nil {
			t.Fatal(err)
		}
	}
	before := env.Metrics(t)
	pods, err := newPodCache(env.Config, pagedlist.DefaultPageSize)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = pods.Start(runCtx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	src := pods.Deletions(func(_ context.Context, p *PodInfo) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: p.Namespace, Name: p.Name}}}
	})
	if err := src.Start(runCtx, q); err != nil {
		t.Fatal(err)
	}
	if err := src.WaitForSync(runCtx); err != nil {
		t.Fatal(err)
	}
	lists := bench.Sum(env.Metrics(t), "apiserver_request_total", `verb="LIST"`, `resource="pods"`) -
		bench.Sum(before, "apiserver_request_total", `verb="LIST"`, `resource="pods"`)
	if lists != 0 && lists != 3 {
		t.Errorf("%v LISTs of pods for %d pods, want 3 pages (or 0: streamed)", lists, n)
	}

	var live corev1.PodList
	if err := env.Client.List(ctx, &live); err != nil {
		t.Fatal(err)
	}
	for i := range live.Items {
		p := &live.Items[i]
		got, err := pods.Get(ctx, p.Namespace, p.Name)
		if err != nil || !reflect.DeepEqual(got, NewPodInfo(p)) {
			t.Fatalf("cached %s/%s: %+v, %v; want %+v", p.Namespace, p.Name, got, err, NewPodInfo(p))
		}
	}

	late := testPod("late", approval3)
	if err := env.Client.Create(ctx, late); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { p, _ := pods.Get(ctx, "default", "late"); return p != nil && p.UID == late.UID })
	if err := env.Client.Delete(ctx, late, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { p, _ := pods.Get(ctx, "default", "late"); return p == nil })
	waitFor(t, func() bool { return q.Len() == 1 })
	if r, _ := q.Get(); r.Name != "late" {
		t.Errorf("deletion source gave %v, want default/late", r)
	}
}

const approval3 = `{"interfaces":[{"interface":"net1","network":"data"}]}`

func testPod(name, approval string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: map[string]string{"other": "x"}},
		Spec: corev1.PodSpec{NodeName: "node-" + name[len(name)-1:], Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if approval != "" {
		p.Annotations[v1alpha1.ApprovedAnnotation] = approval
	}
	return p
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met after 30s")
		}
	}
}
