package agent

import (
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
)

// TestOutdatedApprovalIsRefusedSayingWhatToDo: an approval in the format
// without issue time and key id, correctly signed, is refused with an
// Event and a condition that say it is outdated and what to do.
func TestOutdatedApprovalIsRefusedSayingWhatToDo(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	old := `{"namespace":"tenant","serviceAccount":"default","requestHash":"` + approval.HashRequest("data, uplink") + `","profiles":[],"interfaces":[]}`
	sig := base64.StdEncoding.EncodeToString(ed25519.Sign(priv, []byte(old)))
	h := newHarness(t, newPod("p", old, sig))
	h.r.Verifier = SignedApprovals{Keys: approval.Ed25519Verifier{Keys: []ed25519.PublicKey{pub}}}
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if len(h.dp.applied) != 0 {
		t.Fatalf("applied %+v for an outdated approval", h.dp.applied)
	}
	c := condition(t, h.get(t, "p"))
	if c.Status != corev1.ConditionFalse || c.Reason != v1alpha1.ReasonInvalidApproval || !strings.Contains(c.Message, "format is outdated") || !strings.Contains(c.Message, "re-create the pod") {
		t.Fatalf("condition %+v", c)
	}
	for _, e := range h.events.events {
		if e.Reason == v1alpha1.ReasonInvalidApproval && strings.Contains(e.Note, "format is outdated") {
			return
		}
	}
	t.Fatalf("events %+v, want InvalidApproval saying the format is outdated", h.events.events)
}
