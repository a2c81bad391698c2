package ipam

import (
	"math/bits"
	"net/netip"
)

// pickFree is the one rule by which a walk over a pool (or over a
// namespace's quota slots) chooses what to try once it knows what is held:
// it goes on along wk and returns the first n indices, in walk order, that
// held does not report, visiting each index of the range at most once. An
// empty result means that, as far as held knows, every index is held: the
// range is full. It stops as soon as it has n, so on a huge range it visits
// at most n plus the number of held indices.
func pickFree(wk *walk, held func(uint64) bool, n int) []uint64 {
	var out []uint64
	for len(out) < n {
		i, ok := wk.next()
		if !ok {
			break
		}
		if !held(i) {
			out = append(out, i)
		}
	}
	return out
}

// freeInPool picks up to n addresses of w's pool to try next: going on
// along wk (a walk over the pool, see walkFrom), the first ones that are
// neither a gateway nor in claimed (the addresses the claims of w's
// address space hold; nil before they are known). None means the pool is
// full as far as claimed knows.
func freeInPool(w want, wk *walk, claimed map[netip.Addr]bool, n int) []netip.Addr {
	held := func(i uint64) bool {
		addr := addrAt(w.pool, i)
		return claimed[addr] || w.isGateway(addr)
	}
	picked := pickFree(wk, held, n)
	out := make([]netip.Addr, len(picked))
	for i, idx := range picked {
		out[i] = addrAt(w.pool, idx)
	}
	return out
}

// walkFrom is the walk keyed by key positioned at its step-th index (step
// modulo the range size): from there it visits every index of r once,
// past the end of its sequence back to its beginning. It costs the same
// for any step, so resuming deep into a large pool is cheap.
func walkFrom(r hostRange, key string, step uint64) *walk {
	w := newWalk(r, key)
	// step*stride modulo count, in 128 bits: both are below count <= 2^63,
	// so the high word of the product is below count, as bits.Rem64 needs
	// for an exact remainder; the sum below stays under 2^64.
	hi, lo := bits.Mul64(step%r.count, w.stride)
	w.cur = (w.cur + bits.Rem64(hi, lo, r.count)) % r.count
	return w
}
