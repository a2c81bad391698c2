package approval

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// ErrBadSignature is returned (wrapped) when a signature does not match.
var ErrBadSignature = errors.New("approval signature does not verify")

// ErrOutdated is returned (wrapped) for a correctly signed approval in the
// format before approvals carried their issue time and key id: it is bound
// to no pod and no time, so it could be replayed, and is never accepted.
var ErrOutdated = errors.New("the approval format is outdated (no issue time, no key id): change the pod's " +
	v1alpha1.NetworksAnnotation + " annotation or re-create the pod so that podnet's webhook issues a new approval")

// maxPayload bounds what the agent decodes from an annotation; a real
// approval is a few kilobytes at most.
const maxPayload = 256 << 10

// Encode returns the canonical JSON of an approval. encoding/json of the
// struct is canonical: fields come in declaration order, there are no maps,
// and the same value always gives the same bytes.
func Encode(a *v1alpha1.Approval) ([]byte, error) {
	if a == nil {
		return nil, errors.New("encode approval: nil approval")
	}
	b, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("encode approval for namespace %q: %w", a.Namespace, err)
	}
	return b, nil
}

// Decode parses an approval strictly: unknown fields, trailing data and any
// spelling other than Encode's own (whitespace, field order, escapes) are
// refused, so that one approval has exactly one byte form.
func Decode(payload []byte) (*v1alpha1.Approval, error) {
	if len(payload) > maxPayload {
		return nil, fmt.Errorf("decode approval: %d bytes, more than %d", len(payload), maxPayload)
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	a := &v1alpha1.Approval{}
	if err := dec.Decode(a); err != nil {
		return nil, fmt.Errorf("decode approval: %w", err)
	}
	if dec.More() {
		return nil, errors.New("decode approval: data after the JSON object")
	}
	if a.KeyID == "" && a.IssuedAt.IsZero() {
		return nil, fmt.Errorf("decode approval: %w", ErrOutdated)
	}
	if a.IssuedAt.IsZero() {
		return nil, errors.New("decode approval: no issuedAt")
	}
	// metav1.Time decodes into the local zone; one approval, one value.
	a.IssuedAt = metav1.NewTime(a.IssuedAt.UTC())
	again, err := Encode(a)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(again, payload) {
		return nil, errors.New("decode approval: not in canonical form")
	}
	return a, nil
}

// Sign signs an approval with the signer's current key and returns the two
// annotation values: the canonical JSON (ApprovedAnnotation) and the base64
// signature of its exact bytes (ApprovedSignatureAnnotation). The caller
// sets IssuedAt (and PodUID when it knows the pod); Sign sets KeyID to the
// key it signs with. a itself is not changed.
func Sign(s Signer, a *v1alpha1.Approval) (payload, signature string, err error) {
	if a == nil {
		return "", "", errors.New("sign approval: nil approval")
	}
	if a.IssuedAt.IsZero() {
		return "", "", fmt.Errorf("sign approval for namespace %q: no issuedAt", a.Namespace)
	}
	key, err := s.PrivateKey()
	if err != nil {
		return "", "", fmt.Errorf("sign approval for namespace %q: %w", a.Namespace, err)
	}
	signed := *a
	signed.KeyID = KeyID(key.Public().(ed25519.PublicKey))
	b, err := Encode(&signed)
	if err != nil {
		return "", "", err
	}
	return string(b), base64.StdEncoding.EncodeToString(ed25519.Sign(key, b)), nil
}

// Verify checks the signature of an ApprovedAnnotation value against every
// trusted key and only then decodes it. Nothing in an unverified payload is
// trusted or even parsed. The approval must name the key that verified it.
func Verify(v Verifier, payload, signature string) (*v1alpha1.Approval, error) {
	keys, err := v.PublicKeys()
	if err != nil {
		return nil, fmt.Errorf("verify approval: %w", err)
	}
	a, _, err := verifyWith(keys, payload, signature)
	return a, err
}

// verifyWith is Verify against keys; it also returns the key that signed.
func verifyWith(keys []ed25519.PublicKey, payload, signature string) (*v1alpha1.Approval, ed25519.PublicKey, error) {
	sig, err := base64.StdEncoding.Strict().DecodeString(signature)
	if err != nil {
		return nil, nil, fmt.Errorf("verify approval: signature is not base64: %w", err)
	}
	var signer ed25519.PublicKey
	for _, k := range keys {
		if len(k) == ed25519.PublicKeySize && ed25519.Verify(k, []byte(payload), sig) {
			signer = k
			break
		}
	}
	if signer == nil {
		return nil, nil, fmt.Errorf("verify approval: %w with any of the %d trusted keys", ErrBadSignature, len(keys))
	}
	a, err := Decode([]byte(payload))
	if err != nil {
		return nil, nil, err
	}
	if id := KeyID(signer); a.KeyID != id {
		return nil, nil, fmt.Errorf("verify approval: it names key %q but key %q signed it", a.KeyID, id)
	}
	return a, signer, nil
}

// VerifyPod is what the agent does with a pod: read the two annotations,
// verify the signature, decode, and check the binding. A pod without an
// approval returns (nil, nil).
func VerifyPod(v Verifier, pod *corev1.Pod) (*v1alpha1.Approval, error) {
	return verifyPod(v, pod, Verify)
}

// verifyPod is VerifyPod with verify checking the signature and decoding.
func verifyPod(v Verifier, pod *corev1.Pod, verify func(Verifier, string, string) (*v1alpha1.Approval, error)) (*v1alpha1.Approval, error) {
	payload, hasPayload := pod.Annotations[v1alpha1.ApprovedAnnotation]
	sig, hasSig := pod.Annotations[v1alpha1.ApprovedSignatureAnnotation]
	if !hasPayload && !hasSig {
		return nil, nil
	}
	if !hasPayload || !hasSig {
		return nil, fmt.Errorf("pod %s/%s has only one of %s and %s", pod.Namespace, pod.Name, v1alpha1.ApprovedAnnotation, v1alpha1.ApprovedSignatureAnnotation)
	}
	a, err := verify(v, payload, sig)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if err := CheckBinding(a, pod); err != nil {
		return nil, err
	}
	return a, nil
}
