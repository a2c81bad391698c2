package approval

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// Memo remembers the approvals it verified, so that the agent's every
// reconcile of a pod (its sandbox, its IPs, its phase, each resync) does
// not verify the same signature and decode the same JSON again. It holds
// at most its size of approvals, the oldest going first.
//
// A remembered approval is what Verify returned for exactly that payload
// and signature (the key is their SHA-256), and it is returned only while
// the key that signed it is still trusted: a key taken out of the trusted
// set makes its approvals verify afresh, and fail. Failures are not
// remembered. The binding to the pod is checked on every call, since it
// depends on the pod, not on the annotations alone.
type Memo struct {
	mu   sync.Mutex
	byID map[[sha256.Size]byte]memoEntry
	ring [][sha256.Size]byte // insertion order, for eviction
	next int
}

type memoEntry struct {
	signer   ed25519.PublicKey
	approval *v1alpha1.Approval
}

// NewMemo returns a Memo of at most size approvals (at least 1).
func NewMemo(size int) *Memo {
	size = max(size, 1)
	return &Memo{byID: make(map[[sha256.Size]byte]memoEntry, size), ring: make([][sha256.Size]byte, 0, size)}
}

// VerifyPod is VerifyPod, remembered.
func (m *Memo) VerifyPod(v Verifier, pod *corev1.Pod) (*v1alpha1.Approval, error) {
	return verifyPod(v, pod, m.Verify)
}

// Verify is Verify, remembered. The caller gets its own copy.
func (m *Memo) Verify(v Verifier, payload, signature string) (*v1alpha1.Approval, error) {
	keys, err := v.PublicKeys()
	if err != nil {
		return nil, fmt.Errorf("verify approval: %w", err)
	}
	id := memoID(payload, signature)
	m.mu.Lock()
	e, ok := m.byID[id]
	m.mu.Unlock()
	if ok && trusted(keys, e.signer) {
		return e.approval.DeepCopy(), nil
	}
	a, signer, err := verifyWith(keys, payload, signature)
	if err != nil {
		return nil, err
	}
	m.remember(id, memoEntry{signer: signer, approval: a.DeepCopy()})
	return a, nil
}

func (m *Memo) remember(id [sha256.Size]byte, e memoEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.byID[id]; ok {
		m.byID[id] = e
		return
	}
	if len(m.ring) < cap(m.ring) {
		m.ring = append(m.ring, id)
	} else {
		delete(m.byID, m.ring[m.next])
		m.ring[m.next] = id
		m.next = (m.next + 1) % len(m.ring)
	}
	m.byID[id] = e
}

// memoID names a payload and signature pair; the payload's length comes
// first, so that no other split of the same bytes names the same pair.
func memoID(payload, signature string) [sha256.Size]byte {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(payload)))
	h.Write(n[:])
	h.Write([]byte(payload))
	h.Write([]byte(signature))
	var id [sha256.Size]byte
	h.Sum(id[:0])
	return id
}

func trusted(keys []ed25519.PublicKey, k ed25519.PublicKey) bool {
	for _, t := range keys {
		if t.Equal(k) {
			return true
		}
	}
	return false
}
