package approval

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

func TestIssueWindow(t *testing.T) {
	tests := []struct {
		name    string
		created time.Duration // after issued
		podUID  string        // on the approval
		wantErr string
	}{
		{name: "created right after", created: time.Second},
		{name: "created the same second", created: 0},
		{name: "clock skew tolerated", created: -MaxClockSkew},
		{name: "end of window", created: IssueWindow},
		{name: "created before the skew", created: -MaxClockSkew - time.Second, wantErr: "valid only for the pod it was issued to"},
		{name: "replayed later", created: IssueWindow + time.Second, wantErr: "was issued at 2026-11-23T12:00:00Z"},
		{name: "replayed a day later", created: 24 * time.Hour, wantErr: "created at 2026-11-24T12:00:00Z"},
		{name: "bound to this uid, any age", created: 24 * time.Hour, podUID: "uid-1"},
		{name: "bound to another uid", created: time.Second, podUID: "uid-2", wantErr: "issued for pod uid uid-2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := sample()
			a.PodUID = tc.podUID
			p := pod(map[string]string{v1alpha1.NetworksAnnotation: request})
			p.CreationTimestamp = metav1.NewTime(issued.Add(tc.created))
			wantBindingErr(t, CheckBinding(a, p), tc.wantErr)
		})
	}
	p := pod(map[string]string{v1alpha1.NetworksAnnotation: request})
	p.CreationTimestamp = metav1.Time{}
	if err := CheckBinding(sample(), p); err == nil || !strings.Contains(err.Error(), "no creationTimestamp") {
		t.Fatalf("pod without creationTimestamp: %v", err)
	}
}

func TestOutdatedFormatIsRefusedWithItsOwnError(t *testing.T) {
	s, v := keys(t)
	// The format before approvals carried an issue time and a key id.
	old := `{"namespace":"t1","serviceAccount":"cnf","requestHash":"` + HashRequest(request) + `","profiles":[],"interfaces":[]}`
	sig := base64.StdEncoding.EncodeToString(ed25519.Sign(s.Key, []byte(old)))
	_, err := Verify(v, old, sig)
	if !errors.Is(err, ErrOutdated) || !strings.Contains(err.Error(), "outdated") || !strings.Contains(err.Error(), "re-create the pod") {
		t.Fatalf("old format: %v, want ErrOutdated saying what to do", err)
	}
	// The same payload signed by nobody trusted is a bad signature, not
	// an outdated one: nothing unverified is parsed.
	_, other := keys(t)
	if _, err := Verify(other, old, sig); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("old format, untrusted key: %v", err)
	}
}

func TestApprovalNamesTheKeyThatSignedIt(t *testing.T) {
	s, v := keys(t)
	a := sample()
	a.KeyID = "0123456789abcdef"
	b, err := Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	sig := base64.StdEncoding.EncodeToString(ed25519.Sign(s.Key, b))
	if _, err := Verify(v, string(b), sig); err == nil || !strings.Contains(err.Error(), `names key "0123456789abcdef" but key`) {
		t.Fatalf("wrong key id: %v", err)
	}
	payload, _, err := Sign(s, sample())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(payload, `"keyID":"`+KeyID(v.Keys[0])+`"`) || len(KeyID(v.Keys[0])) != 16 {
		t.Fatalf("payload %s does not name key %s", payload, KeyID(v.Keys[0]))
	}
	noTime := sample()
	noTime.IssuedAt = metav1.Time{}
	if _, _, err := Sign(s, noTime); err == nil || !strings.Contains(err.Error(), "no issuedAt") {
		t.Fatalf("approval without issue time signed: %v", err)
	}
}

// TestKeyRotation walks the documented rotation: trust old and new, sign
// with the new, then stop trusting the old.
func TestKeyRotation(t *testing.T) {
	oldKey, oldPub := keys(t)
	newKey, newPub := keys(t)
	both := Ed25519Verifier{Keys: []ed25519.PublicKey{oldPub.Keys[0], newPub.Keys[0]}}
	p := pod(map[string]string{v1alpha1.NetworksAnnotation: request})
	sign := func(s Signer) (string, string) {
		payload, sig, err := Sign(s, sample())
		if err != nil {
			t.Fatal(err)
		}
		return payload, sig
	}
	oldPayload, oldSig := sign(oldKey)
	newPayload, newSig := sign(newKey)
	for name, ann := range map[string][2]string{"old": {oldPayload, oldSig}, "new": {newPayload, newSig}} {
		p.Annotations[v1alpha1.ApprovedAnnotation], p.Annotations[v1alpha1.ApprovedSignatureAnnotation] = ann[0], ann[1]
		a, err := VerifyPod(both, p)
		if err != nil {
			t.Fatalf("%s key while both are trusted: %v", name, err)
		}
		want := KeyID(oldPub.Keys[0])
		if name == "new" {
			want = KeyID(newPub.Keys[0])
		}
		if a.KeyID != want {
			t.Fatalf("%s key: approval names %s, want %s", name, a.KeyID, want)
		}
	}
	p.Annotations[v1alpha1.ApprovedAnnotation], p.Annotations[v1alpha1.ApprovedSignatureAnnotation] = oldPayload, oldSig
	if _, err := VerifyPod(newPub, p); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("old key after it left the trusted set: %v", err)
	}
}

func TestReusable(t *testing.T) {
	now := issued.Add(2 * time.Second)
	updated := pod(map[string]string{v1alpha1.NetworksAnnotation: request})
	created := pod(map[string]string{v1alpha1.NetworksAnnotation: request})
	created.UID, created.CreationTimestamp = "", metav1.Time{}
	other := sample()
	other.Interfaces = other.Interfaces[:1]
	bound := sample()
	bound.PodUID = "uid-1"
	stale := sample()
	stale.IssuedAt = metav1.NewTime(now.Add(-time.Minute))
	tests := []struct {
		name               string
		existing, decided  *v1alpha1.Approval
		pod                *corev1.Pod
		create, wantReused bool
	}{
		{name: "create, just issued", existing: sample(), decided: sample(), pod: created, create: true, wantReused: true},
		{name: "create, other grant", existing: sample(), decided: other, pod: created, create: true},
		{name: "create, too old", existing: stale, decided: sample(), pod: created, create: true},
		{name: "create, bound to a uid", existing: bound, decided: sample(), pod: created, create: true},
		{name: "update, in window", existing: sample(), decided: sample(), pod: updated, wantReused: true},
		{name: "update, bound to this uid", existing: bound, decided: sample(), pod: updated, wantReused: true},
		{name: "update, out of window", existing: stale, decided: sample(), pod: updated},
		{name: "no existing", decided: sample(), pod: updated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Reusable(tc.existing, tc.decided, tc.pod, tc.create, now); got != tc.wantReused {
				t.Fatalf("Reusable = %v, want %v", got, tc.wantReused)
			}
		})
	}
}
