package agent

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// TestReconcileRefusesPrivilegedPod: a pod carrying a verified approval
// whose spec holds NET_ADMIN, or NET_RAW on a network without raw sockets
// (an approval cloned onto a pod the webhook never judged), gets nothing:
// no address, no interface; its condition and a Warning Event name the
// container and the capability. Once attached, a pod that comes to break
// the approval (an ephemeral container keeping NET_RAW) loses what it had.
func TestReconcileRefusesPrivilegedPod(t *testing.T) {
	pod := newPod("p", "two", "good")
	pod.Spec.Containers = []corev1.Container{{Name: "app", SecurityContext: &corev1.SecurityContext{
		Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "NET_RAW"}}}}}
	h := newHarness(t, pod)
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if len(h.dp.applied) != 0 || len(h.ip.ensured) != 0 {
		t.Fatalf("attached to a pod holding NET_ADMIN: applied %v, ensured %v", h.dp.applied, h.ip.ensured)
	}
	c := condition(t, h.get(t, "p"))
	for _, want := range []string{`container "app" adds NET_ADMIN`, "spec.containers[0].securityContext.capabilities.add[0]", `container "app" adds NET_RAW`, `network "data"`} {
		if c.Status != corev1.ConditionFalse || c.Reason != v1alpha1.ReasonPrivilegedPod || !strings.Contains(c.Message, want) {
			t.Errorf("condition %+v, want %s naming %q", c, v1alpha1.ReasonPrivilegedPod, want)
		}
	}
	var note string
	for _, e := range h.events.events {
		if e.Type == corev1.EventTypeWarning && e.Reason == v1alpha1.ReasonPrivilegedPod {
			note = e.Note
		}
	}
	if !strings.Contains(note, `container "app" adds NET_ADMIN`) {
		t.Fatalf("events %+v, want a Warning %s naming the container and capability", h.events.events, v1alpha1.ReasonPrivilegedPod)
	}
	// Refusing again says nothing new.
	n := len(h.events.events)
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if len(h.events.events) != n {
		t.Errorf("second refusal emitted %+v", h.events.events[n:])
	}

	// A pod that drops NET_RAW is attached; an ephemeral container that
	// keeps it later takes everything away again.
	ok := newPod("q", "two", "good")
	ok.Spec.Containers = []corev1.Container{{Name: "app", SecurityContext: &corev1.SecurityContext{
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}}}}}
	if err := h.c.Create(context.Background(), ok); err != nil {
		t.Fatal(err)
	}
	h.sb.netns["uid-q"] = "/var/run/netns/cni-q"
	if _, err := h.reconcile(t, "q"); err != nil {
		t.Fatal(err)
	}
	if len(h.dp.applied) != 1 || condition(t, h.get(t, "q")).Reason != v1alpha1.ReasonAttached {
		t.Fatalf("pod dropping NET_RAW: applied %v, condition %+v", h.dp.applied, condition(t, h.get(t, "q")))
	}
	q := h.get(t, "q")
	q.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg"}}}
	if err := h.c.Update(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	if _, err := h.reconcile(t, "q"); err != nil {
		t.Fatal(err)
	}
	if got := h.dp.detached; !slices.Contains(got, "uid-q /var/run/netns/cni-q") {
		t.Fatalf("detached %v, want pod q's interfaces removed", got)
	}
	q = h.get(t, "q")
	if c := condition(t, q); c.Reason != v1alpha1.ReasonPrivilegedPod || !strings.Contains(c.Message, `ephemeral container "dbg" holds NET_RAW`) ||
		q.Annotations[v1alpha1.NetworkStatusAnnotation] != "[]" {
		t.Fatalf("condition %+v status %q", c, q.Annotations[v1alpha1.NetworkStatusAnnotation])
	}
}
