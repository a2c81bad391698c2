package approval

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Signer hands out the private key that signs now. Sign reads it once per
// approval, so the key id written into an approval is always that of the
// key that signed it, even while a rotation swaps the key file.
// certs.FileSigner is the hot-reloading one the webhook uses; Ed25519Signer
// holds a key in memory.
type Signer interface {
	PrivateKey() (ed25519.PrivateKey, error)
}

// Verifier hands out the public keys an approval may be signed with: during
// a rotation, the old and the new. certs.FileVerifier is the hot-reloading
// one the agent uses; Ed25519Verifier holds one key in memory.
type Verifier interface {
	PublicKeys() ([]ed25519.PublicKey, error)
}

// keyIDBytes is how much of the public key's SHA-256 names it: enough to
// tell a handful of keys apart, short enough to read in an annotation.
const keyIDBytes = 8

// KeyID names a public key in Approval.KeyID: the hex of the first 8 bytes
// of the SHA-256 of the raw 32-byte key.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:keyIDBytes])
}

// Ed25519Signer signs with an in-memory private key.
type Ed25519Signer struct{ Key ed25519.PrivateKey }

// PrivateKey implements Signer.
func (s Ed25519Signer) PrivateKey() (ed25519.PrivateKey, error) {
	if len(s.Key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("ed25519 private key has %d bytes, want %d", len(s.Key), ed25519.PrivateKeySize)
	}
	return s.Key, nil
}

// Ed25519Verifier verifies with in-memory public keys.
type Ed25519Verifier struct{ Keys []ed25519.PublicKey }

// PublicKeys implements Verifier.
func (v Ed25519Verifier) PublicKeys() ([]ed25519.PublicKey, error) {
	for i, k := range v.Keys {
		if len(k) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("ed25519 public key %d has %d bytes, want %d", i+1, len(k), ed25519.PublicKeySize)
		}
	}
	return v.Keys, nil
}

// SignerKeys verifies with the public key of a Signer's current private
// key: the webhook checks with it whether an approval already on a pod is
// its own and can stay.
type SignerKeys struct{ Signer Signer }

// PublicKeys implements Verifier.
func (s SignerKeys) PublicKeys() ([]ed25519.PublicKey, error) {
	priv, err := s.Signer.PrivateKey()
	if err != nil {
		return nil, err
	}
	return []ed25519.PublicKey{priv.Public().(ed25519.PublicKey)}, nil
}
