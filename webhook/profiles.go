package webhook

import (
	"context"
	"sync"
	"sync/atomic"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
)

// profileSnapshot holds the cached NetworkProfiles as one slice that every
// admission shares, listed again only after the informer has seen a
// profile change. Listing the cache on every admission copied every
// profile into a fresh slice: with a thousand profiles that was most of
// the webhook's allocations, its garbage collection and its peak memory.
// Admissions only read the slice; a change replaces it, never edits it.
// Along with the slice it keeps the profiles prepared for decisions
// (policy.ProfileSet): validating every profile on every admission was
// most of the webhook's own time per pod with a hundred profiles.
type profileSnapshot struct {
	reader client.Reader
	// stale is set by the informer's store while it stores a change
	// (see newProfileSnapshot), so a list that starts after stale is
	// cleared sees that change.
	stale atomic.Bool
	mu    sync.RWMutex
	set   *policy.ProfileSet
}

// newProfileSnapshot returns a snapshot of reader's profiles that
// informer's store marks stale. The mark is an index function, not an
// event handler: the store calls index functions inside the very update
// (add, update, delete, relist) that a reader of the cache sees, while
// event handlers run later on a goroutine of their own. A profile that
// the cache has is therefore never missing from the next admission.
// It must be created before the informer starts.
func newProfileSnapshot(reader client.Reader, informer cache.Informer) (*profileSnapshot, error) {
	s := &profileSnapshot{reader: reader}
	s.stale.Store(true)
	err := informer.AddIndexers(toolscache.Indexers{profileSnapshotIndex: func(any) ([]string, error) {
		s.stale.Store(true)
		return nil, nil
	}})
	return s, err
}

// profileSnapshotIndex names the index that marks the snapshot stale; it
// indexes nothing.
const profileSnapshotIndex = "podnet.io/profile-snapshot"

// list returns the profiles prepared for decisions; callers must not
// modify them.
func (s *profileSnapshot) list(ctx context.Context) (*policy.ProfileSet, error) {
	if !s.stale.Load() {
		s.mu.RLock()
		defer s.mu.RUnlock()
		return s.set, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stale.Swap(false) {
		// Another admission listed while this one waited.
		return s.set, nil
	}
	var profiles v1alpha1.NetworkProfileList
	// The cache's objects are shared, not copied: policy only reads them.
	if err := s.reader.List(ctx, &profiles, client.UnsafeDisableDeepCopy); err != nil {
		s.stale.Store(true)
		return nil, err
	}
	s.set = policy.NewProfileSet(profiles.Items)
	return s.set, nil
}
