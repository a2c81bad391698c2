package agent

import (
	"context"
	"errors"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/agent/nodehold"
	"podnet.io/podnet/agent/uninstall"
	"podnet.io/podnet/api/v1alpha1"
)

func TestUninstallResultKeepsReadiness(t *testing.T) {
	ready := newPod("p", "two", "good")
	ready.Status.Conditions = []corev1.PodCondition{{Type: v1alpha1.NetworksReadyCondition, Status: corev1.ConditionTrue}}
	waiting := newPod("q", "two", "good")
	if r := uninstallResult(ready); !r.Ready || r.Reason != v1alpha1.ReasonUninstalling {
		t.Errorf("a Ready pod: %+v, want Ready with reason %s", r, v1alpha1.ReasonUninstalling)
	}
	if r := uninstallResult(waiting); r.Ready || r.Reason != v1alpha1.ReasonUninstalling {
		t.Errorf("a pod not yet attached: %+v, want not Ready with reason %s", r, v1alpha1.ReasonUninstalling)
	}
}

// fakeNode records the node-wide removal.
type fakeNode struct{ removed, stopped, resumed, unlabeled, relabeled int }

func (f *fakeNode) Unlabel(context.Context) error { f.unlabeled++; return nil }
func (f *fakeNode) Relabel()                      { f.relabeled++ }

func (f *fakeNode) RemoveNode(context.Context) ([]string, error) {
	f.removed++
	return []string{"pnbr-data"}, nil
}
func (f *fakeNode) Stop(context.Context) error { f.stopped++; return nil }
func (f *fakeNode) Resume()                    { f.resumed++ }

func agentDaemonSet(marked bool) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "podnet-system", Name: "podnet-agent", UID: "ds-uid"}}
	if marked {
		ds.Annotations = map[string]string{v1alpha1.UninstallAnnotation: "run-1"}
	}
	return ds
}

// uninstallHarness is the pod reconciler wired to an Uninstall, with a
// Node to report on.
func uninstallHarness(t *testing.T, marked bool, pods ...*corev1.Pod) (*harness, *uninstall.Uninstall, *fakeNode) {
	t.Helper()
	objs := []client.Object{agentDaemonSet(marked), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node,
		Labels: map[string]string{v1alpha1.NodeHoldNRILabel: v1alpha1.NodeHoldNRIEnforced, "zone": "a"}}}}
	for _, p := range pods {
		objs = append(objs, p)
	}
	h := newHarness(t, objs...)
	fn := &fakeNode{}
	u := &uninstall.Uninstall{DaemonSet: types.NamespacedName{Namespace: "podnet-system", Name: "podnet-agent"}, NodeName: node,
		Reader: h.c, Writer: h.c, Node: fn, Overlays: fn, Pods: make(chan crevent.GenericEvent, 16)}
	u.Labels = []uninstall.NodeLabels{fn, nodehold.Labels{Label: nodehold.Label{Client: h.c, NodeName: node, Off: u.Underway}}}
	h.r.Uninstall = u
	return h, u, fn
}

func reconcileOnce(t *testing.T, u *uninstall.Uninstall) reconcile.Result {
	t.Helper()
	res, err := u.Reconcile(context.Background(), reconcile.Request{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// holdLabel is the node's hold label, and whether it has one.
func holdLabel(t *testing.T, c client.Client) (string, bool) {
	t.Helper()
	var n corev1.Node
	if err := c.Get(context.Background(), types.NamespacedName{Name: node}, &n); err != nil {
		t.Fatal(err)
	}
	if n.Labels["zone"] != "a" {
		t.Errorf("node labels %v lost zone=a", n.Labels)
	}
	v, ok := n.Labels[v1alpha1.NodeHoldNRILabel]
	return v, ok
}

func reported(t *testing.T, c client.Client) (string, bool) {
	t.Helper()
	var n corev1.Node
	if err := c.Get(context.Background(), types.NamespacedName{Name: node}, &n); err != nil {
		t.Fatal(err)
	}
	v, ok := n.Annotations[v1alpha1.AgentUninstalledAnnotation]
	return v, ok
}

// TestUninstallDetachesEveryPodThenCleansTheNode: with the mark on, a
// reconcile of an attached pod detaches it through the usual path
// (interfaces and addresses) and attaches nothing; the pod stays Ready
// with reason Uninstalling; the node is cleaned and reported only once
// every pod holding podnet state is done.
func TestUninstallDetachesEveryPodThenCleansTheNode(t *testing.T) {
	attached := newPod("p", "two", "good")
	attached.Annotations[v1alpha1.NetworkStatusAnnotation] = `[{"name":"tenant/data","interface":"net1"}]`
	attached.Status.Conditions = []corev1.PodCondition{{Type: v1alpha1.NetworksReadyCondition, Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonAttached}}
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "plain", UID: "uid-plain"}, Spec: corev1.PodSpec{NodeName: node}}
	h, u, fn := uninstallHarness(t, true, attached, plain)
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"

	if res := reconcileOnce(t, u); res.RequeueAfter == 0 {
		t.Fatal("the node was cleaned while a pod still holds podnet state")
	}
	if fn.removed != 0 || fn.unlabeled != 0 {
		t.Fatal("node removal ran before the pods were detached")
	}
	if !u.Underway() {
		t.Fatal("Underway false with the mark on")
	}
	queued := []string{}
	for len(u.Pods) > 0 {
		queued = append(queued, (<-u.Pods).Object.GetName())
	}
	if slices.Sort(queued); !slices.Contains(queued, "p") || !slices.Contains(queued, "plain") {
		t.Fatalf("queued %v, want every pod of the node", queued)
	}

	for _, name := range []string{"p", "plain"} {
		if _, err := h.reconcile(t, name); err != nil {
			t.Fatal(err)
		}
	}
	if len(h.dp.applied) != 0 {
		t.Fatalf("applied %+v during an uninstall", h.dp.applied)
	}
	if !slices.Equal(h.dp.detached, []string{"uid-p /var/run/netns/cni-p"}) || !slices.Equal(h.ip.released, []string{"uid-p"}) {
		t.Fatalf("detached %v, released %v: want pod p's interfaces and every address it holds", h.dp.detached, h.ip.released)
	}
	p := h.get(t, "p")
	if c := condition(t, p); c.Status != corev1.ConditionTrue || c.Reason != v1alpha1.ReasonUninstalling {
		t.Fatalf("condition %+v, want True with reason %s", c, v1alpha1.ReasonUninstalling)
	}
	if st := p.Annotations[v1alpha1.NetworkStatusAnnotation]; st != "[]" {
		t.Fatalf("network-status %q, want []", st)
	}
	if _, ok := h.get(t, "plain").Annotations[v1alpha1.NetworkStatusAnnotation]; ok {
		t.Fatal("a pod without networks got a network-status")
	}

	reconcileOnce(t, u)
	if fn.removed != 1 || fn.stopped != 1 || fn.unlabeled != 1 {
		t.Fatalf("node removed %d times, overlays stopped %d times, labels removed %d times, want once each", fn.removed, fn.stopped, fn.unlabeled)
	}
	if v, ok := holdLabel(t, h.c); ok {
		t.Fatalf("the node keeps %s=%s after the uninstall", v1alpha1.NodeHoldNRILabel, v)
	}
	// A probe that ends during the uninstall puts no label back.
	if err := (nodehold.Label{Client: h.c, NodeName: node, Off: u.Underway}).Set(context.Background(), "unknown"); err != nil {
		t.Fatal(err)
	}
	if v, ok := holdLabel(t, h.c); ok {
		t.Fatalf("a probe's report during the uninstall labelled the node %s=%s", v1alpha1.NodeHoldNRILabel, v)
	}
	if v, ok := reported(t, h.c); !ok || v != "ds-uid" {
		t.Fatalf("node report %q (%v), want the DaemonSet's UID", v, ok)
	}
	// Later events of the DaemonSet (its status) change nothing.
	reconcileOnce(t, u)
	if fn.removed != 1 {
		t.Fatalf("node removed again: %d", fn.removed)
	}
}

// TestUninstallRefusesNewAttaches: a pod not yet attached gets nothing,
// and a condition saying why.
func TestUninstallRefusesNewAttaches(t *testing.T) {
	h, _, _ := uninstallHarness(t, true, newPod("new", "two", "good"))
	h.sb.netns["uid-new"] = "/var/run/netns/cni-new"
	if _, err := h.reconcile(t, "new"); err != nil {
		t.Fatal(err)
	}
	if len(h.dp.applied) != 0 || len(h.ip.ensured) != 0 {
		t.Fatalf("applied %+v, ensured %v during an uninstall", h.dp.applied, h.ip.ensured)
	}
	if c := condition(t, h.get(t, "new")); c.Status != corev1.ConditionFalse || c.Reason != v1alpha1.ReasonUninstalling {
		t.Fatalf("condition %+v, want False with reason %s", c, v1alpha1.ReasonUninstalling)
	}
}

// TestUninstallMarkTakenBack: without the mark the reconciler attaches as
// usual; a mark taken back resumes the overlays, withdraws the node's
// report and hands every pod back for attaching.
func TestUninstallMarkTakenBack(t *testing.T) {
	h, u, fn := uninstallHarness(t, true, newPod("p", "two", "good"))
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	reconcileOnce(t, u)
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	reconcileOnce(t, u)
	if _, ok := reported(t, h.c); !ok {
		t.Fatal("no report after the node was cleaned")
	}
	for len(u.Pods) > 0 {
		<-u.Pods
	}
	ds := agentDaemonSet(false)
	if err := h.c.Update(context.Background(), ds); err != nil {
		t.Fatal(err)
	}
	reconcileOnce(t, u)
	if fn.resumed != 1 || len(u.Pods) != 1 || fn.relabeled != 1 {
		t.Fatalf("resumed %d times, %d pods queued, relabeled %d times: want the overlays back, the pod queued and the labels asked for", fn.resumed, len(u.Pods), fn.relabeled)
	}
	if u.Underway() {
		t.Fatal("Underway true after the mark was taken back")
	}
	if err := (nodehold.Label{Client: h.c, NodeName: node, Off: u.Underway}).Set(context.Background(), "enforced"); err != nil {
		t.Fatal(err)
	}
	if v, _ := holdLabel(t, h.c); v != v1alpha1.NodeHoldNRIEnforced {
		t.Fatalf("hold label %q after the mark was taken back, want %s", v, v1alpha1.NodeHoldNRIEnforced)
	}
	if _, ok := reported(t, h.c); ok {
		t.Fatal("the node's report stayed after the mark was taken back")
	}
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if len(h.dp.applied) != 1 {
		t.Fatalf("applied %d times after the mark was taken back, want once", len(h.dp.applied))
	}
}

// TestUninstallMarkReadFailureAttachesNothing: when the mark cannot be
// read the pod is retried, neither attached nor detached.
func TestUninstallMarkReadFailureAttachesNothing(t *testing.T) {
	h, u, _ := uninstallHarness(t, false, newPod("p", "two", "good"))
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	u.Reader = failingReader{h.c}
	if _, err := h.reconcile(t, "p"); err == nil {
		t.Fatal("no error when the mark cannot be read")
	}
	if len(h.dp.applied)+len(h.dp.detached) != 0 {
		t.Fatalf("applied %v, detached %v without knowing the mark", h.dp.applied, h.dp.detached)
	}
}

type failingReader struct{ client.Reader }

func (failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("cache not reachable")
}
