package infocache

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/pagedlist"
	"podnet.io/podnet/test/bench"
	"podnet.io/podnet/test/testenv"
)

// TestIntegrationClaimCache: against a real API server, the claim cache
// lists every claim in pages of the size it is given (or, where the
// server streams the initial list, in none), holds for each the
// ClaimInfo the claim itself reduces to, finds claims by pod UID, follows
// creations and deletions by watch, and hands its sources only those, not
// the claims of the initial list.
func TestIntegrationClaimCache(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	const n = 2*pagedlist.DefaultPageSize + 10
	for i := range n {
		c := fullClaim(fmt.Sprintf("c-%04d", i), fmt.Sprintf("pod-%d", i/2), i%7 == 0)
		c.UID, c.ResourceVersion, c.CreationTimestamp = "", "", metav1.Time{}
		if err := env.Client.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	before := env.Metrics(t)
	claims, err := newClaimCache(env.Config, env.Scheme, pagedlist.DefaultPageSize)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = claims.Start(runCtx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	src := claims.Source(ClaimRequest, func(_ context.Context, c *ClaimInfo) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: ClaimKey("deleted-" + c.Name)}}
	})
	if err := src.Start(runCtx, q); err != nil {
		t.Fatal(err)
	}
	if err := src.WaitForSync(runCtx); err != nil {
		t.Fatal(err)
	}
	lists := bench.Sum(env.Metrics(t), "apiserver_request_total", `verb="LIST"`, `resource="ipclaims"`) -
		bench.Sum(before, "apiserver_request_total", `verb="LIST"`, `resource="ipclaims"`)
	if lists != 0 && lists != 3 {
		t.Errorf("%v LISTs of claims for %d claims, want 3 pages (or 0: streamed)", lists, n)
	}

	var live v1alpha1.IPClaimList
	if err := env.Client.List(ctx, &live); err != nil {
		t.Fatal(err)
	}
	for i := range live.Items {
		c := &live.Items[i]
		got, err := claims.Get(ctx, c.Name)
		if err != nil || !reflect.DeepEqual(got, NewClaimInfo(c)) {
			t.Fatalf("cached %s: %+v, %v; want %+v", c.Name, got, err, NewClaimInfo(c))
		}
	}
	if got := claims.OfPod("pod-3"); !reflect.DeepEqual(got, []string{"c-0006", "c-0007"}) && !reflect.DeepEqual(got, []string{"c-0007", "c-0006"}) {
		t.Errorf("claims of pod-3: %v", got)
	}
	walked := 0
	claims.Each(func(*ClaimInfo) bool { walked++; return true })
	if walked != n || q.Len() != 0 {
		t.Errorf("walked %d claims, want %d; %d listed claims queued, want 0", walked, n, q.Len())
	}

	late := fullClaim("late", "pod-late", false)
	late.UID, late.ResourceVersion = "", ""
	if err := env.Client.Create(ctx, late); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { c, _ := claims.Get(ctx, "late"); return c != nil && c.UID == late.UID })
	if got := claims.OfPod("pod-late"); !reflect.DeepEqual(got, []string{"late"}) {
		t.Errorf("claims of pod-late: %v", got)
	}
	waitFor(t, func() bool { return q.Len() == 1 })
	if r, _ := q.Get(); r.Name != "late" {
		t.Errorf("source gave %v for a new claim, want late", r)
	} else {
		q.Done(r)
	}
	if err := env.Client.Delete(ctx, late, client.Preconditions{UID: &late.UID}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { c, _ := claims.Get(ctx, "late"); return c == nil })
	if got := claims.OfPod("pod-late"); len(got) != 0 {
		t.Errorf("claims of pod-late after its delete: %v", got)
	}
	waitFor(t, func() bool { return q.Len() == 1 })
	if r, _ := q.Get(); r.Name != "deleted-late" {
		t.Errorf("source gave %v for a deleted claim, want deleted-late", r)
	}
}
