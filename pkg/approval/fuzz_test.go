package approval

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"testing"

	"podnet.io/podnet/api/v1alpha1"
)

// FuzzDecode: any bytes either fail to decode or decode to an approval
// whose encoding is exactly those bytes (one approval, one byte form), with
// an issue time; never a panic.
func FuzzDecode(f *testing.F) {
	canonical, err := Encode(sample())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(canonical)
	f.Add([]byte(`{"namespace":"t1","serviceAccount":"cnf","requestHash":"","profiles":[],"interfaces":[]}`))
	f.Add([]byte(`{"keyID":"","issuedAt":null,"namespace":"t1"}`))
	f.Add([]byte(`{"keyID":"a","issuedAt":"2026-11-23T12:00:00+01:00","namespace":"","serviceAccount":"","requestHash":"","profiles":null,"interfaces":null}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		a, err := Decode(payload)
		if err != nil {
			return
		}
		again, err := Encode(a)
		if err != nil {
			t.Fatalf("decoded approval does not encode: %v", err)
		}
		if !bytes.Equal(again, payload) {
			t.Fatalf("decoded %q, encodes as %q", payload, again)
		}
		if a.IssuedAt.IsZero() {
			t.Fatalf("decoded %q without an issue time", payload)
		}
	})
}

// FuzzVerify: whatever the payload and signature, Verify never panics and
// accepts only what the trusted key signed, byte for byte, naming that key.
func FuzzVerify(f *testing.F) {
	seed := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	s := Ed25519Signer{Key: seed}
	v := Ed25519Verifier{Keys: []ed25519.PublicKey{seed.Public().(ed25519.PublicKey)}}
	payload, sig, err := Sign(s, sample())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(payload, sig)
	f.Add(payload+" ", sig)
	f.Add(payload, sig[:10])
	f.Add("", "")
	f.Add("{}", base64.StdEncoding.EncodeToString(ed25519.Sign(seed, []byte("{}"))))
	f.Fuzz(func(t *testing.T, payload, signature string) {
		a, err := Verify(v, payload, signature)
		if err != nil {
			return
		}
		raw, err := base64.StdEncoding.DecodeString(signature)
		if err != nil || !ed25519.Verify(v.Keys[0], []byte(payload), raw) {
			t.Fatalf("accepted a payload the key did not sign: %q", payload)
		}
		if a.KeyID != KeyID(v.Keys[0]) {
			t.Fatalf("accepted approval names key %q", a.KeyID)
		}
		// The binding check must not panic on any verified approval.
		_ = CheckBinding(a, pod(map[string]string{v1alpha1.NetworksAnnotation: request}))
	})
}
