package claimgc

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// graceTracker remembers when each claim (by UID) was first seen without
// its pod, so that a collector deletes it only once that has lasted its
// grace period.
type graceTracker struct {
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu sync.Mutex
	// since holds when each candidate claim was first seen.
	since map[types.UID]time.Time
}

func (g *graceTracker) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// candidate returns when the claim was first seen without its pod.
func (g *graceTracker) candidate(uid types.UID) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.since == nil {
		g.since = map[types.UID]time.Time{}
	}
	t, ok := g.since[uid]
	if !ok {
		t = g.now()
		g.since[uid] = t
	}
	return t
}

// clear forgets a claim that is held again, or gone.
func (g *graceTracker) clear(uid types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.since, uid)
}
