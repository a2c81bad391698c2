package approval

import (
	"crypto/ed25519"
	"errors"
	"reflect"
	"testing"

	"podnet.io/podnet/api/v1alpha1"
)

// memoRequest is the networks request the memo tests' approvals answer.
const memoRequest = "data"

// signedFor signs an approval for namespace ns.
func signedFor(t *testing.T, s Signer, ns string) (payload, signature string) {
	t.Helper()
	payload, signature, err := Sign(s, &v1alpha1.Approval{Namespace: ns, ServiceAccount: "cnf", IssuedAt: issued, RequestHash: HashRequest(memoRequest),
		Interfaces: []v1alpha1.ApprovedInterface{{Interface: "net1", Network: "data", Kind: v1alpha1.KindBridge, Bridge: "pnbr-data"}}})
	if err != nil {
		t.Fatal(err)
	}
	return payload, signature
}

// TestMemoAnswersAsVerifyDoes: the memo gives what Verify gives, each
// caller its own copy, and remembers only what verified.
func TestMemoAnswersAsVerifyDoes(t *testing.T) {
	s, v := keys(t)
	payload, sig := signedFor(t, s, "t1")
	want, err := Verify(v, payload, sig)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMemo(4)
	for i := range 3 {
		got, err := m.Verify(v, payload, sig)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("call %d: %+v, %v; want %+v", i, got, err, want)
		}
		// A caller changing its approval changes no one else's.
		got.Interfaces[0].Bridge = "pnbr-other"
	}
	if len(m.byID) != 1 {
		t.Fatalf("remembered %d approvals, want 1", len(m.byID))
	}
	bad := sig[:len(sig)-4] + "AAA="
	for range 2 {
		if _, err := m.Verify(v, payload, bad); !errors.Is(err, ErrBadSignature) {
			t.Fatalf("a bad signature: %v, want %v", err, ErrBadSignature)
		}
	}
	if _, err := m.Verify(v, payload+" ", sig); err == nil {
		t.Fatal("a changed payload verified")
	}
	if len(m.byID) != 1 {
		t.Fatalf("failures were remembered: %d approvals", len(m.byID))
	}
}

// TestMemoForgetsUntrustedKeys: an approval remembered under a key that
// is no longer trusted verifies afresh, and fails; under a key rotated in
// beside it, it still holds.
func TestMemoForgetsUntrustedKeys(t *testing.T) {
	s, v := keys(t)
	_, other := keys(t)
	payload, sig := signedFor(t, s, "t1")
	m := NewMemo(4)
	if _, err := m.Verify(v, payload, sig); err != nil {
		t.Fatal(err)
	}
	both := Ed25519Verifier{Keys: []ed25519.PublicKey{other.Keys[0], v.Keys[0]}}
	if _, err := m.Verify(both, payload, sig); err != nil {
		t.Fatalf("with its key still trusted beside another: %v", err)
	}
	if _, err := m.Verify(other, payload, sig); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("with its key no longer trusted: %v, want %v", err, ErrBadSignature)
	}
}

// TestMemoKeepsAtMostItsSize: the oldest approval goes first.
func TestMemoKeepsAtMostItsSize(t *testing.T) {
	s, v := keys(t)
	m := NewMemo(2)
	var ids [][32]byte
	for _, ns := range []string{"a", "b", "c"} {
		payload, sig := signedFor(t, s, ns)
		if _, err := m.Verify(v, payload, sig); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, memoID(payload, sig))
	}
	if len(m.byID) != 2 {
		t.Fatalf("kept %d approvals, want 2", len(m.byID))
	}
	if _, kept := m.byID[ids[0]]; kept {
		t.Fatal("the oldest approval was kept")
	}
	for _, id := range ids[1:] {
		if _, kept := m.byID[id]; !kept {
			t.Fatal("a newer approval was dropped")
		}
	}
}

// TestMemoVerifyPodChecksTheBinding: a remembered approval still binds
// only the pod it was issued for.
func TestMemoVerifyPodChecksTheBinding(t *testing.T) {
	s, v := keys(t)
	payload, sig := signedFor(t, s, "t1")
	m := NewMemo(4)
	ann := map[string]string{v1alpha1.NetworksAnnotation: memoRequest, v1alpha1.ApprovedAnnotation: payload, v1alpha1.ApprovedSignatureAnnotation: sig}
	if _, err := m.VerifyPod(v, pod(ann)); err != nil {
		t.Fatal(err)
	}
	other := pod(ann)
	other.Namespace = "t2"
	if _, err := m.VerifyPod(v, other); err == nil {
		t.Fatal("a remembered approval verified for a pod of another namespace")
	}
}
