package infocache

import (
	"context"
	"fmt"
	"reflect"
	"slices"
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
// itself reduces to, follows creations by watch, hands each deletion to
// its deletion sources, and every pod it takes in, changes or drops to
// its change handlers, in order.
func TestIntegrationPodCache(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	const n = 2*pagedlist.DefaultPageSize + 10
	for i := range n {
		approval := ""
		if i%3 == 0 {
			approval = approval3
		}
		p := testPod(fmt.Sprintf("p-%04d", i), approval)
		// Pods 0 and 3 report one MAC on a bridge network, the other
		// bridge pods each their own: one duplicate MAC, read from the
		// paged list.
		if i%3 == 0 && i < 30 {
			p.Annotations[v1alpha1.ApprovedAnnotation] = approvalBridge
			mac := i + 1
			if i == 3 {
				mac = 1
			}
			p.Annotations[v1alpha1.NetworkStatusAnnotation] = statusWithMAC(mac)
		}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	before := env.Metrics(t)
	pods, err := newPodCache(env.Config, pagedlist.DefaultPageSize)
	if err != nil {
		t.Fatal(err)
	}
	var changesMu sync.Mutex
	var changes []string // "+name", "~name", "-name"
	pods.OnChange(func(was, now *PodInfo) {
		changesMu.Lock()
		defer changesMu.Unlock()
		switch {
		case was == nil:
			changes = append(changes, "+"+now.Name)
		case now == nil:
			changes = append(changes, "-"+was.Name)
		case was.Name == now.Name:
			changes = append(changes, "~"+now.Name)
		}
	})
	changed := func() []string {
		changesMu.Lock()
		defer changesMu.Unlock()
		return slices.Clone(changes)
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

	if got := pods.DuplicateMACs(); !reflect.DeepEqual(got, map[string]int{"data": 1}) {
		t.Errorf("duplicate MACs after the list: %v, want one on data", got)
	}
	if got := changed(); len(got) != n || got[0] != "+p-0000" {
		t.Errorf("%d changes after the list (first %v), want every pod added", len(got), got[:min(1, len(got))])
	}

	// A pod created with the MAC of p-0006 makes a second duplicate; its
	// deletion takes it away again.
	late := testPod("late", approvalBridge)
	late.Annotations[v1alpha1.NetworkStatusAnnotation] = statusWithMAC(7)
	if err := env.Client.Create(ctx, late); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { p, _ := pods.Get(ctx, "default", "late"); return p != nil && p.UID == late.UID })
	if got := pods.DuplicateMACs(); !reflect.DeepEqual(got, map[string]int{"data": 2}) {
		t.Errorf("duplicate MACs with late: %v, want two on data", got)
	}
	if err := env.Client.Delete(ctx, late, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { p, _ := pods.Get(ctx, "default", "late"); return p == nil })
	waitFor(t, func() bool { return q.Len() == 1 })
	if r, _ := q.Get(); r.Name != "late" {
		t.Errorf("deletion source gave %v, want default/late", r)
	}
	// An agent reports a new MAC for p-0003: no duplicate is left.
	var p3 corev1.Pod
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "p-0003"}, &p3); err != nil {
		t.Fatal(err)
	}
	p3.Annotations[v1alpha1.NetworkStatusAnnotation] = statusWithMAC(99)
	if err := env.Client.Update(ctx, &p3); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(pods.DuplicateMACs()) == 0 })
	// The deletion of late may first set its deletionTimestamp (a change).
	after := func() []string {
		return slices.DeleteFunc(changed()[n:], func(c string) bool { return c == "~late" })
	}
	waitFor(t, func() bool { return len(after()) == 3 })
	if got := after(); !reflect.DeepEqual(got, []string{"+late", "-late", "~p-0003"}) {
		t.Errorf("changes after the list: %v, want late added and dropped, p-0003 changed", got)
	}
}

const (
	approval3      = `{"interfaces":[{"interface":"net1","network":"data"}]}`
	approvalBridge = `{"interfaces":[{"interface":"net1","network":"data","kind":"bridge"}]}`
)

// statusWithMAC is a network-status whose net1 has MAC 02:00:00:00:00:<i>.
func statusWithMAC(i int) string {
	return fmt.Sprintf(`[{"name":"pods","interface":"eth0","default":true},{"name":"default/data","interface":"net1","mac":"02:00:00:00:00:%02x"}]`, i)
}

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
