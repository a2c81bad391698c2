package claims

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TombstoneTTL is how long a deleted claim is remembered, far longer than
// an informer takes to see a delete.
const TombstoneTTL = 2 * time.Minute

// maxCreateAttempts bounds Create's retries when a taken name is released
// between the create and the read of its holder.
const maxCreateAttempts = 3

// Holder is the pod interface a claim is held for.
type Holder struct {
	// UID is the pod's.
	UID, Network, Interface string
}

// Kind tells the engine about one kind of claim; T is a pointer to the
// claim's type.
type Kind[T client.Object] struct {
	// Name is the kind's name in errors ("IPClaim").
	Name string
	// New returns an empty claim to read into.
	New func() T
	// Holder is the pod interface claim is held for.
	Holder func(claim T) Holder
	// Slot reports whether claim is a quota slot: slots are deleted after
	// the claims they count, so a namespace never holds one over its cap.
	Slot func(claim T) bool
}

// Ledger is one allocator's memory of its own work (package doc). It is
// safe for concurrent use.
type Ledger[T client.Object] struct {
	kind  Kind[T]
	clock clock.PassiveClock

	mu sync.Mutex
	// created holds, per pod UID, the claims created and not released.
	created map[string][]T
	// released holds the UIDs of claims deleted, with when, until every
	// cache has surely caught up (TombstoneTTL).
	released map[types.UID]time.Time
	// resume holds, per key (an interface and what it walks), how far
	// earlier fruitless walks went.
	resume map[string]uint64
}

// NewLedger returns an empty ledger for claims of kind k on clock c (nil:
// the real clock).
func NewLedger[T client.Object](k Kind[T], c clock.PassiveClock) *Ledger[T] {
	if c == nil {
		c = clock.RealClock{}
	}
	return &Ledger[T]{kind: k, clock: c, created: map[string][]T{}, released: map[types.UID]time.Time{}, resume: map[string]uint64{}}
}

// Create creates claim through c. ok reports whether the name is now the
// claim's holder's: fresh is claim (with the UID the server gave it) when
// this call created it, nil when the holder had it already. When this
// call did not create it, cur is the claim the name has in the API
// server: the holder's own, or, when ok is false, somebody else's. It
// does not Remember fresh: the caller does, once it keeps it.
func (l *Ledger[T]) Create(ctx context.Context, c client.Client, claim T) (ok bool, fresh, cur T, err error) {
	var none T
	h := l.kind.Holder(claim)
	for range maxCreateAttempts {
		err := c.Create(ctx, claim)
		if err == nil {
			return true, claim, none, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return false, none, none, fmt.Errorf("create %s %q: %w", l.kind.Name, claim.GetName(), err)
		}
		existing := l.kind.New()
		err = c.Get(ctx, client.ObjectKey{Name: claim.GetName()}, existing)
		if apierrors.IsNotFound(err) {
			continue // released between the create and the get: try again
		}
		if err != nil {
			return false, none, none, fmt.Errorf("get %s %q: %w", l.kind.Name, claim.GetName(), err)
		}
		if l.kind.Holder(existing) == h {
			return true, none, existing, nil
		}
		return false, none, existing, nil
	}
	return false, none, none, fmt.Errorf("create %s %q: the name was taken and released %d times in a row", l.kind.Name, claim.GetName(), maxCreateAttempts)
}

// Delete deletes each claim through c if it is still the same object (UID
// precondition), quota slots last. Gone already, or replaced by a new
// claim of the same name, both mean the claim no longer holds its name:
// not an error. Each deleted claim is forgotten and tombstoned, and
// deleted (when not nil) is told.
func (l *Ledger[T]) Delete(ctx context.Context, c client.Writer, claims []T, deleted func(T)) error {
	claims = slices.Clone(claims)
	slices.SortStableFunc(claims, func(x, y T) int { return boolInt(l.kind.Slot(x)) - boolInt(l.kind.Slot(y)) })
	var errs []error
	for _, claim := range claims {
		uid := claim.GetUID()
		err := c.Delete(ctx, claim, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete %s %q: %w", l.kind.Name, claim.GetName(), err))
			continue
		}
		l.tombstone(l.kind.Holder(claim).UID, uid)
		if deleted != nil {
			deleted(claim)
		}
	}
	return errors.Join(errs...)
}

// tombstone forgets the created claim uid of pod podUID, remembers it as
// deleted, and drops the tombstones old enough for every cache to have
// seen their delete.
func (l *Ledger[T]) tombstone(podUID string, uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := slices.DeleteFunc(l.created[podUID], func(c T) bool { return c.GetUID() == uid })
	if len(kept) == 0 {
		delete(l.created, podUID)
	} else {
		l.created[podUID] = kept
	}
	now := l.clock.Now()
	for u, at := range l.released {
		if now.Sub(at) > TombstoneTTL {
			delete(l.released, u)
		}
	}
	l.released[uid] = now
}

// Remember notes a claim this allocator created for pod uid and keeps.
func (l *Ledger[T]) Remember(uid string, claim T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.created[uid] = append(l.created[uid], claim)
}

// Forget drops and returns the noted claims of pod uid that match.
func (l *Ledger[T]) Forget(uid string, match func(T) bool) []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	var gone, kept []T
	for _, c := range l.created[uid] {
		if match(c) {
			gone = append(gone, c)
		} else {
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		delete(l.created, uid)
	} else {
		l.created[uid] = kept
	}
	return gone
}

// Mine is what pod uid holds among claims that match: those listed (from
// a cache) less those deleted lately, plus those created that the cache
// may not show yet.
func (l *Ledger[T]) Mine(uid string, listed []T, match func(T) bool) []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	var mine []T
	for _, c := range listed {
		if _, gone := l.released[c.GetUID()]; !gone && match(c) {
			mine = append(mine, c)
		}
	}
	for _, c := range l.created[uid] {
		if _, gone := l.released[c.GetUID()]; !gone && match(c) && !slices.ContainsFunc(mine, func(m T) bool { return m.GetUID() == c.GetUID() }) {
			mine = append(mine, c)
		}
	}
	return mine
}

// Released reports whether this allocator deleted the claim lately.
func (l *Ledger[T]) Released(uid types.UID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, gone := l.released[uid]
	return gone
}

// ResumeAt is how far earlier fruitless walks went for key.
func (l *Ledger[T]) ResumeAt(key string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.resume[key]
}

// SetResume records where the next walk for key starts (0 forgets it).
func (l *Ledger[T]) SetResume(key string, n uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n == 0 {
		delete(l.resume, key)
		return
	}
	l.resume[key] = n
}

// Pointers are pointers to each of items (a list's Items), in order.
func Pointers[E any](items []E) []*E {
	out := make([]*E, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
