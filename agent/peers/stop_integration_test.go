package peers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/agent"
	"podnet.io/podnet/agent/peers"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/test/testenv"
)

// TestIntegrationStopTakesTheOverlaysOff: Stop (uninstall) deletes the
// node's tunnel table and removes its VNI annotation, and syncs after it
// put neither back, even while a VXLAN device is still listed; Resume
// lets the next sync write both again.
func TestIntegrationStopTakesTheOverlaysOff(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	c := env.Client
	createNode(t, c, "n1", "", "10.0.0.1")
	createNode(t, c, "n2", "7", "10.0.0.2")
	// Another test of this binary registers the same controller name.
	skip := true
	mgr, err := manager.New(env.Config, manager.Options{Scheme: env.Scheme, Cache: agent.CacheOptions("n1"), Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: &skip}})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	w := &peers.Watch{NodeName: "n1", Dataplane: rec, Lock: rec, Resync: time.Hour}
	if err := w.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	testenv.RunManager(t, ctx, mgr)
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	rec.setDevice("pnbr-v4", &dataplane.SpanDevice{VNI: 7, Port: 4789})
	if err := w.Track(ctx, "pnbr-v4", peers.Span{VNI: 7, Port: 4789, Family: corev1.IPv4Protocol}); err != nil {
		t.Fatal(err)
	}
	vnis := func() string {
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: "n1"}, &n); err != nil {
			t.Fatal(err)
		}
		return n.Annotations[v1alpha1.NodeVNIsAnnotation]
	}
	if rec.allowed(7) != "[10.0.0.2]" || vnis() != "7" {
		t.Fatalf("before Stop: VNI 7 accepted from %s, published %q: the checks below would prove nothing", rec.allowed(7), vnis())
	}

	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rec.allowed(7); got != "none" {
		t.Fatalf("after Stop the tunnel table lets VNI 7 in from %s, want no table", got)
	}
	if got := vnis(); got != "" {
		t.Fatalf("after Stop n1 publishes %q", got)
	}
	// The node set changes and the watch syncs: still nothing.
	if _, err := w.Reconcile(ctx, reconcile.Request{}); err != nil {
		t.Fatal(err)
	}
	if got := rec.allowed(7); got != "none" || vnis() != "" {
		t.Fatalf("a sync after Stop wrote the table (%s) or the annotation (%q)", got, vnis())
	}

	w.Resume()
	if _, err := w.Reconcile(ctx, reconcile.Request{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "table and annotation back after Resume", func(ctx context.Context) error {
		if _, err := w.Reconcile(ctx, reconcile.Request{}); err != nil {
			return err
		}
		if rec.allowed(7) != "[10.0.0.2]" || vnis() != "7" {
			return fmt.Errorf("VNI 7 accepted from %s, published %q", rec.allowed(7), vnis())
		}
		return nil
	})
}
