package approval

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// Signer signs a payload. certs.FileSigner is the hot-reloading one the
// webhook uses; Ed25519Signer holds a key in memory.
type Signer interface {
	Sign(payload []byte) ([]byte, error)
}

// Verifier checks a payload's signature. certs.FileVerifier is the
// hot-reloading one the agent uses; Ed25519Verifier holds a key in memory.
type Verifier interface {
	Verify(payload, sig []byte) error
}

// ErrBadSignature is returned (wrapped) when a signature does not match.
var ErrBadSignature = errors.New("approval signature does not verify")

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
	again, err := Encode(a)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(again, payload) {
		return nil, errors.New("decode approval: not in canonical form")
	}
	return a, nil
}

// Sign encodes and signs an approval and returns the two annotation values:
// the canonical JSON (ApprovedAnnotation) and the base64 signature of its
// exact bytes (ApprovedSignatureAnnotation).
func Sign(s Signer, a *v1alpha1.Approval) (payload, signature string, err error) {
	b, err := Encode(a)
	if err != nil {
		return "", "", err
	}
	sig, err := s.Sign(b)
	if err != nil {
		return "", "", fmt.Errorf("sign approval for namespace %q: %w", a.Namespace, err)
	}
	return string(b), base64.StdEncoding.EncodeToString(sig), nil
}

// Verify checks the signature of an ApprovedAnnotation value and only then
// decodes it. Nothing in an unverified payload is trusted or even parsed.
func Verify(v Verifier, payload, signature string) (*v1alpha1.Approval, error) {
	sig, err := base64.StdEncoding.Strict().DecodeString(signature)
	if err != nil {
		return nil, fmt.Errorf("verify approval: signature is not base64: %w", err)
	}
	if err := v.Verify([]byte(payload), sig); err != nil {
		// Every Verifier's refusal is ErrBadSignature to callers, so the
		// agent can tell a forged or stale approval from other failures.
		if !errors.Is(err, ErrBadSignature) {
			err = fmt.Errorf("%w: %w", ErrBadSignature, err)
		}
		return nil, fmt.Errorf("verify approval: %w", err)
	}
	return Decode([]byte(payload))
}

// CheckBinding refuses an approval that was issued for another namespace,
// another service account or another request text than the pod's own, so
// that a signed approval copied onto another pod grants nothing.
func CheckBinding(a *v1alpha1.Approval, pod *corev1.Pod) error {
	key := pod.Namespace + "/" + pod.Name
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = v1alpha1.DefaultServiceAccount
	}
	switch {
	case a.Namespace != pod.Namespace:
		return fmt.Errorf("approval on pod %s was issued for namespace %q", key, a.Namespace)
	case a.ServiceAccount != sa:
		return fmt.Errorf("approval on pod %s was issued for service account %q, the pod runs as %q", key, a.ServiceAccount, sa)
	case a.RequestHash != v1alpha1.HashRequest(pod.Annotations[v1alpha1.NetworksAnnotation]):
		return fmt.Errorf("approval on pod %s answers another %s request", key, v1alpha1.NetworksAnnotation)
	}
	return nil
}

// VerifyPod is what the agent does with a pod: read the two annotations,
// verify the signature, decode, and check the binding. A pod without an
// approval returns (nil, nil).
func VerifyPod(v Verifier, pod *corev1.Pod) (*v1alpha1.Approval, error) {
	payload, hasPayload := pod.Annotations[v1alpha1.ApprovedAnnotation]
	sig, hasSig := pod.Annotations[v1alpha1.ApprovedSignatureAnnotation]
	if !hasPayload && !hasSig {
		return nil, nil
	}
	if !hasPayload || !hasSig {
		return nil, fmt.Errorf("pod %s/%s has only one of %s and %s", pod.Namespace, pod.Name, v1alpha1.ApprovedAnnotation, v1alpha1.ApprovedSignatureAnnotation)
	}
	a, err := Verify(v, payload, sig)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if err := CheckBinding(a, pod); err != nil {
		return nil, err
	}
	return a, nil
}

// Ed25519Signer signs with an in-memory private key.
type Ed25519Signer struct{ Key ed25519.PrivateKey }

// Sign implements Signer.
func (s Ed25519Signer) Sign(payload []byte) ([]byte, error) {
	if len(s.Key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("ed25519 private key has %d bytes, want %d", len(s.Key), ed25519.PrivateKeySize)
	}
	return ed25519.Sign(s.Key, payload), nil
}

// Ed25519Verifier verifies with an in-memory public key.
type Ed25519Verifier struct{ Key ed25519.PublicKey }

// Verify implements Verifier.
func (v Ed25519Verifier) Verify(payload, sig []byte) error {
	if len(v.Key) != ed25519.PublicKeySize {
		return fmt.Errorf("ed25519 public key has %d bytes, want %d", len(v.Key), ed25519.PublicKeySize)
	}
	if !ed25519.Verify(v.Key, payload, sig) {
		return ErrBadSignature
	}
	return nil
}
