package ipam

import (
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"
)

// PoolBackoff spaces out the attempts on a pool that had no free address.
// Without it every event of every pod waiting for such a pool would walk it
// again (up to maxProbes creates and as many reads each time); with it a
// full pool costs nothing until its delay has passed, and the delay grows
// exponentially, with jitter so the agents of a cluster do not retry in
// step. A pool is keyed by network and prefix: the same pool under two
// networks is two pools. The zero value is not usable; nil is, and never
// waits.
type PoolBackoff struct {
	// Base is the first delay, Max the largest.
	Base, Max time.Duration
	// Jitter is the fraction of each delay that is random, in [0, 1).
	Jitter float64

	now    func() time.Time
	random func() float64

	mu    sync.Mutex
	pools map[poolKey]*poolWait
}

type poolKey struct {
	network string
	pool    netip.Prefix
}

type poolWait struct {
	failures int
	until    time.Time
}

// NewPoolBackoff returns a backoff from base up to max with 20% jitter.
func NewPoolBackoff(base, max time.Duration) *PoolBackoff {
	return &PoolBackoff{Base: base, Max: max, Jitter: 0.2, now: time.Now, random: rand.Float64, pools: map[poolKey]*poolWait{}}
}

// backoffDelay is the delay after the n-th failure in a row (n from 1):
// base doubled n-1 times, capped at max, of which the fraction jitter is
// scaled by r in [0, 1).
func backoffDelay(n int, base, max time.Duration, jitter, r float64) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	return d - time.Duration(float64(d)*jitter*r)
}

// wait is how long the pool is still to be left alone.
func (b *PoolBackoff) wait(network string, pool netip.Prefix) time.Duration {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.pools[poolKey{network, pool}]
	if w == nil {
		return 0
	}
	return max(w.until.Sub(b.now()), 0)
}

// failed records a fruitless attempt and returns the delay before the next.
func (b *PoolBackoff) failed(network string, pool netip.Prefix) time.Duration {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	k := poolKey{network, pool}
	w := b.pools[k]
	if w == nil {
		w = &poolWait{}
		b.pools[k] = w
	}
	w.failures++
	d := backoffDelay(w.failures, b.Base, b.Max, b.Jitter, b.random())
	w.until = b.now().Add(d)
	return d
}

// succeeded ends the pool's backoff.
func (b *PoolBackoff) succeeded(network string, pool netip.Prefix) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.pools, poolKey{network, pool})
}

// freed ends the backoff of the network's pool holding addr: this
// allocator just released an address there, so there is one to take.
func (b *PoolBackoff) freed(network string, addr netip.Addr) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.pools {
		if k.network == network && k.pool.Contains(addr) {
			delete(b.pools, k)
		}
	}
}
