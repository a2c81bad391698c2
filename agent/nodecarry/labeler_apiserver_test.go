package nodecarry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/carry"
	"podnet.io/podnet/test/testenv"
)

// staticHost is a node whose links and modules the test sets.
type staticHost struct{ have *carry.Node }

func (h staticHost) Probe(context.Context, []carry.Need) (carry.Node, error) { return *h.have, nil }
func (staticHost) Watch(ctx context.Context, _ func(Change)) error           { <-ctx.Done(); return nil }

// TestLabelerKeepsOnlyItsCarryLabels runs Sync against a real API
// server: the node gets the labels of the needs it satisfies, loses
// those it no longer does, and keeps every other label; the reconciler
// is told when that answer changes, and only then.
func TestLabelerKeepsOnlyItsCarryLabels(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	c := env.Client
	stale := carry.Need{What: carry.NeedLink, Name: "gone0"}.Key()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a", stale: "true"}}}
	profile := &v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: "up"}, Spec: v1alpha1.NetworkProfileSpec{
		Networks: []v1alpha1.Network{{Name: "up", Macvlan: &v1alpha1.MacvlanNetwork{Master: "data0"}}}}}
	for _, o := range []client.Object{node, profile} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	have := &carry.Node{Links: map[string]bool{"data0": true}, Modules: map[string]bool{"macvlan": true}}
	changed := 0
	l := &Labeler{NodeName: "n1", Profiles: c, Node: c, Writer: c, Host: staticHost{have}, Changed: func() { changed++ }}
	labels := func() map[string]string {
		t.Helper()
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: "n1"}, &n); err != nil {
			t.Fatal(err)
		}
		return n.Labels
	}
	nic, mod := "carry.podnet.io/nic.data0", "carry.podnet.io/mod.macvlan"

	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	got := labels()
	if got[nic] != "true" || got[mod] != "true" || got["zone"] != "a" || got[stale] != "" {
		t.Errorf("labels after the first probe = %v", got)
	}
	if h, ok := l.Have(); !ok || !carry.Carries(h, &profile.Spec.Networks[0]) {
		t.Errorf("Have = %+v, %v: want a node that carries the network", h, ok)
	}

	// The NIC goes: its label goes, and the reconciler hears of it.
	have.Links = map[string]bool{}
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	got = labels()
	if _, ok := got[nic]; ok || got[mod] != "true" || got["zone"] != "a" {
		t.Errorf("labels after data0 went = %v", got)
	}
	if changed != 1 {
		t.Errorf("Changed called %d times, want 1", changed)
	}
	if h, _ := l.Have(); carry.Carries(h, &profile.Spec.Networks[0]) {
		t.Error("Have still carries the network without data0")
	}
	// Nothing changed: nothing written, nobody told.
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if changed != 1 {
		t.Errorf("Changed called %d times after a probe that found nothing new, want 1", changed)
	}
}

// TestLabelerOffRemovesItsLabels: during an uninstall (Off) a Sync takes
// every carry label off and keeps the others; once Off is false again the
// next Sync writes them back.
func TestLabelerOffRemovesItsLabels(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	c := env.Client
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}}}
	profile := &v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: "up"}, Spec: v1alpha1.NetworkProfileSpec{
		Networks: []v1alpha1.Network{{Name: "up", Macvlan: &v1alpha1.MacvlanNetwork{Master: "data0"}}}}}
	for _, o := range []client.Object{node, profile} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	have := &carry.Node{Links: map[string]bool{"data0": true}, Modules: map[string]bool{"macvlan": true}}
	off := false
	l := &Labeler{NodeName: "n1", Profiles: c, Node: c, Writer: c, Host: staticHost{have}, Off: func() bool { return off }}
	carryLabels := func() []string {
		t.Helper()
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: "n1"}, &n); err != nil {
			t.Fatal(err)
		}
		if n.Labels["zone"] != "a" {
			t.Errorf("labels %v lost zone=a", n.Labels)
		}
		var out []string
		for k := range n.Labels {
			if isCarryKey(k) {
				out = append(out, k)
			}
		}
		return out
	}
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := carryLabels(); len(got) != 2 {
		t.Fatalf("carry labels %v, want the NIC's and the module's", got)
	}
	off = true
	if err := l.Unlabel(ctx); err != nil {
		t.Fatal(err)
	}
	if got := carryLabels(); len(got) != 0 {
		t.Fatalf("carry labels %v during an uninstall, want none", got)
	}
	if err := l.Sync(ctx); err != nil { // a probe during the uninstall
		t.Fatal(err)
	}
	if got := carryLabels(); len(got) != 0 {
		t.Fatalf("carry labels %v written back during an uninstall", got)
	}
	off = false
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := carryLabels(); len(got) != 2 {
		t.Fatalf("carry labels %v once the mark was taken back, want both again", got)
	}
}
