package certs

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// PEM block types of the key files.
const (
	privateKeyType = "PRIVATE KEY"
	publicKeyType  = "PUBLIC KEY"
)

// FileSigner signs with the Ed25519 private key in a file, reloading it when
// the file changes. It implements approval.Signer.
type FileSigner struct{ *keyFile[ed25519.PrivateKey] }

// LoadSigner loads the private key at path (PEM PKCS#8, Ed25519). Later
// changes to the file are picked up on the next Sign; see keyFile.
func LoadSigner(path string) (*FileSigner, error) {
	f, err := loadKeyFile(path, ParsePrivateKey)
	if err != nil {
		return nil, err
	}
	return &FileSigner{f}, nil
}

// PrivateKey implements approval.Signer: the key in the file as it is now.
func (s *FileSigner) PrivateKey() (ed25519.PrivateKey, error) {
	return s.current()
}

// Sign signs payload with the key in the file as it is now.
func (s *FileSigner) Sign(payload []byte) ([]byte, error) {
	key, err := s.current()
	if err != nil {
		return nil, err
	}
	return ed25519.Sign(key, payload), nil
}

// Public is the public key of the private key now in use.
func (s *FileSigner) Public() (ed25519.PublicKey, error) {
	key, err := s.current()
	if err != nil {
		return nil, err
	}
	return key.Public().(ed25519.PublicKey), nil
}

// FileVerifier verifies with the Ed25519 public keys in a file, reloading
// them when the file changes. It implements approval.Verifier. The file may
// hold several keys so that a rotation can go without a gap: add the new
// public key, switch the webhook's private key, remove the old public key.
type FileVerifier struct{ *keyFile[[]ed25519.PublicKey] }

// LoadVerifier loads the public key(s) at path (PEM PKIX, Ed25519). A
// later file that does not parse keeps the last good keys it still lists
// (see StillListed); Check reports it.
func LoadVerifier(path string) (*FileVerifier, error) {
	f, err := loadKeyFile(path, ParsePublicKeys)
	if err != nil {
		return nil, err
	}
	f.keep = StillListed
	return &FileVerifier{f}, nil
}

// StillListed is what stays trusted of the last good keys when the file
// no longer parses: a key whose block is gone from the file was removed on
// purpose (a rotation that drops a compromised key) and is not trusted a
// moment longer, whatever else in the file is broken. When nothing in the
// file is a PEM block (it is missing, empty or cut before its first
// block), it tells nothing about which key was removed, and every last
// good key stays, so that running pods are not all refused meanwhile.
func StillListed(last []ed25519.PublicKey, data []byte) []ed25519.PublicKey {
	var listed [][]byte
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		listed = append(listed, block.Bytes)
	}
	if len(listed) == 0 {
		return last
	}
	var kept []ed25519.PublicKey
	for _, k := range last {
		der, err := x509.MarshalPKIXPublicKey(k)
		if err == nil && slices.ContainsFunc(listed, func(b []byte) bool { return bytes.Equal(b, der) }) {
			kept = append(kept, k)
		}
	}
	return kept
}

// PublicKeys implements approval.Verifier: the keys in the file as it is
// now.
func (v *FileVerifier) PublicKeys() ([]ed25519.PublicKey, error) {
	return v.current()
}

// ErrBadSignature is returned when no key of the file verifies a signature.
var ErrBadSignature = errors.New("signature does not verify with any trusted approval key")

// Verify implements approval.Verifier.
func (v *FileVerifier) Verify(payload, sig []byte) error {
	keys, err := v.current()
	if err != nil {
		return err
	}
	for _, k := range keys {
		if ed25519.Verify(k, payload, sig) {
			return nil
		}
	}
	return ErrBadSignature
}

// ParsePrivateKey parses one PEM "PRIVATE KEY" block (PKCS#8) holding an
// Ed25519 key.
func ParsePrivateKey(data []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != privateKeyType {
		return nil, fmt.Errorf("no PEM %q block", privateKeyType)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse PKCS#8 private key: %w", err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("private key is %T, want Ed25519", k)
	}
	return ek, nil
}

// ParsePublicKeys parses every PEM "PUBLIC KEY" block (PKIX) in data; there
// must be at least one and each must be Ed25519. Other blocks are refused,
// so that a private key put in the agent's file by mistake is an error.
func ParsePublicKeys(data []byte) ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != publicKeyType {
			return nil, fmt.Errorf("PEM block %q where only %q is allowed", block.Type, publicKeyType)
		}
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse PKIX public key %d: %w", len(keys)+1, err)
		}
		ek, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("public key %d is %T, want Ed25519", len(keys)+1, k)
		}
		keys = append(keys, ek)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no PEM %q block", publicKeyType)
	}
	return keys, nil
}

// GenerateKeyPair writes a new Ed25519 key pair: the private key (PEM
// PKCS#8, mode 0600) to privPath and the public key (PEM PKIX, 0644) to
// pubPath, creating their folders. Each file is replaced atomically, so a
// running FileSigner or FileVerifier never reads half a key.
func GenerateKeyPair(privPath, pubPath string) error {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("generate ed25519 key: %w", err)
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return fmt.Errorf("marshal private key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return fmt.Errorf("marshal public key: %w", err)
	}
	if err := writeAtomic(privPath, pem.EncodeToMemory(&pem.Block{Type: privateKeyType, Bytes: privDER}), 0o600); err != nil {
		return err
	}
	return writeAtomic(pubPath, pem.EncodeToMemory(&pem.Block{Type: publicKeyType, Bytes: pubDER}), 0o644)
}

// writeAtomic writes data to a temporary file next to path and renames it
// over path.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create folder for %q: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %q: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("write %q: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %q: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %q: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %q: %w", path, err)
	}
	return nil
}
