package webhook

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"

	"podnet.io/podnet/pkg/approval"
)

// SigningKey is an approval.Signer whose key is loaded on first use and
// retried until it loads: the webhook starts, serves /healthz and reports
// not ready while the key's secret is not mounted yet, instead of crashing
// in a restart loop. Once loaded, the loaded signer does its own reloading
// (certs.FileSigner follows file changes).
type SigningKey struct {
	load func() (approval.Signer, error)

	mu     sync.Mutex
	signer approval.Signer
}

// NewSigningKey returns a SigningKey that calls load until it succeeds.
func NewSigningKey(load func() (approval.Signer, error)) *SigningKey {
	return &SigningKey{load: load}
}

// Loaded returns nil once the key is loaded, and otherwise tries to load it
// now; it is the "signing-key" readiness check.
func (k *SigningKey) Loaded() error {
	_, err := k.get()
	return err
}

// PrivateKey implements approval.Signer.
func (k *SigningKey) PrivateKey() (ed25519.PrivateKey, error) {
	s, err := k.get()
	if err != nil {
		return nil, err
	}
	return s.PrivateKey()
}

func (k *SigningKey) get() (approval.Signer, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.signer != nil {
		return k.signer, nil
	}
	if k.load == nil {
		return nil, errors.New("no signing key configured")
	}
	s, err := k.load()
	if err != nil {
		return nil, fmt.Errorf("signing key not loaded: %w", err)
	}
	k.signer = s
	return s, nil
}
