package sandbox

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/cnisocket"
	"podnet.io/podnet/pkg/cri"
)

// TestAdmitSandboxRequest: each pod the agent must not attach for is
// refused with a reason naming the pod.
func TestAdmitSandboxRequest(t *testing.T) {
	base := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1", Annotations: map[string]string{v1alpha1.ApprovedAnnotation: "{}"}},
			Spec:       corev1.PodSpec{NodeName: "n1"},
		}
	}
	now := metav1.Now()
	for name, tc := range map[string]struct {
		edit func(*corev1.Pod, *cnisocket.Request)
		want string
	}{
		"approved pod of this node": {func(*corev1.Pod, *cnisocket.Request) {}, ""},
		"no uid given":              {func(_ *corev1.Pod, r *cnisocket.Request) { r.UID = "" }, `uid "" is not the pod's`},
		"wrong uid":                 {func(_ *corev1.Pod, r *cnisocket.Request) { r.UID = "u2" }, `uid "u2" is not the pod's`},
		"other node":                {func(p *corev1.Pod, _ *cnisocket.Request) { p.Spec.NodeName = "n2" }, `runs on node "n2"`},
		"host network":              {func(p *corev1.Pod, _ *cnisocket.Request) { p.Spec.HostNetwork = true }, "host network"},
		"terminating":               {func(p *corev1.Pod, _ *cnisocket.Request) { p.DeletionTimestamp = &now }, "terminating"},
		"unapproved":                {func(p *corev1.Pod, _ *cnisocket.Request) { p.Annotations = nil }, "has no " + v1alpha1.ApprovedAnnotation},
	} {
		p := base()
		req := cnisocket.Request{Namespace: "ns", Name: "p", UID: "u1", SandboxID: "sb", NetNS: "/n"}
		tc.edit(p, &req)
		err := admitSandboxRequest(p, req, "n1", false)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "ns/p")):
			t.Errorf("%s: err = %v, want it to name ns/p and contain %q", name, err, tc.want)
		}
	}
}

// TestSandboxAttachAnswersOnlyItsSandbox: an answer for another sandbox of
// the pod leaves a request waiting; one for its sandbox, or for every
// sandbox of the pod, ends it; the hint goes with the last request.
func TestSandboxAttachAnswersOnlyItsSandbox(t *testing.T) {
	s := &Handshake{}
	s.init()
	w := &attachWaiter{sandbox: "sb1", done: make(chan error, 1)}
	s.waiters["u"] = []*attachWaiter{w}
	s.hints["u"] = sandboxOf("sb1")
	s.Answer("u", "sb0", nil)
	select {
	case <-w.done:
		t.Fatal("an answer for another sandbox ended the request")
	default:
	}
	s.Answer("u", "sb1", nil)
	if err := <-w.done; err != nil {
		t.Fatalf("answer: %v", err)
	}
	if _, ok := s.Sandbox("u"); !ok {
		t.Fatal("hint gone before the request finished")
	}
	s.unwait("u", w)
	if _, ok := s.Sandbox("u"); ok || s.Waiting() != 0 {
		t.Fatalf("hint or request left after the request finished (waiting %d)", s.Waiting())
	}
	var nilAttach *Handshake
	nilAttach.Answer("u", "", nil) // the reconciler calls it unconditionally
	if _, ok := nilAttach.Sandbox("u"); ok {
		t.Fatal("a nil Handshake has a hint")
	}
}

// TestSandboxAttachTimesOnlyTheAwaitedAttach: NRI keeps a sandbox's hint
// until the sandbox stops, and every later attach of the pod (its status
// changes) must not be timed as one the sandbox waited for.
func TestSandboxAttachTimesOnlyTheAwaitedAttach(t *testing.T) {
	s := &Handshake{}
	s.init()
	asked := time.Now().Add(-time.Second)
	s.hints["u"] = cri.Sandbox{ID: "sb1", Created: asked}
	if at, ok := s.Unanswered("u"); !ok || !at.Equal(asked) {
		t.Fatalf("Unanswered before any answer = %v, %v; want %v, true", at, ok, asked)
	}
	s.Answer("u", "sb0", nil)
	if _, ok := s.Unanswered("u"); !ok {
		t.Fatal("an answer for another sandbox ended the timing")
	}
	s.Answer("u", "sb1", errors.New("not yet"))
	if at, ok := s.Unanswered("u"); ok {
		t.Fatalf("Unanswered after the sandbox's answer = %v, true; want false", at)
	}
	if _, ok := s.Sandbox("u"); !ok {
		t.Fatal("the hint went with the answer")
	}
	if _, ok := s.Unanswered("other"); ok {
		t.Fatal("a pod without a request is timed")
	}
	var nilAttach *Handshake
	if _, ok := nilAttach.Unanswered("u"); ok {
		t.Fatal("a nil Handshake times an attach")
	}
}

func sandboxOf(id string) cri.Sandbox { return cri.Sandbox{ID: id, NetNS: "/var/run/netns/" + id} }
