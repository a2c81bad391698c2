package ipam

import (
	"context"
	"errors"
	"net/netip"

	"podnet.io/podnet/api/v1alpha1"
)

// quota is what one Ensure call knows about the interface's quota slots:
// the cap per IP family of the address space, the slots the interface
// holds, and which of them a wanted address still uses (the others are
// released).
type quota struct {
	max  int32
	held []v1alpha1.IPClaim
	used []bool
}

// keep marks the held slot of w's address space and family as used and
// returns it (nil if none).
func (q *quota) keep(w want) *v1alpha1.IPClaim {
	for i := range q.held {
		if !q.used[i] && sameQuota(&q.held[i], w) {
			q.used[i] = true
			return &q.held[i]
		}
	}
	return nil
}

// keepFormer marks the held slots of the former scheme (one quota per
// pool, no address space) of w's pool as used: they stay with the address
// they were taken for, and go with it.
func (q *quota) keepFormer(w want) {
	for i := range q.held {
		if q.held[i].Spec.AddressSpace == "" && q.held[i].Spec.Pool == w.pool.String() {
			q.used[i] = true
		}
	}
}

// sameQuota reports whether slot counts against w's quota: the same
// address space and IP family.
func sameQuota(slot *v1alpha1.IPClaim, w want) bool {
	pool, err := netip.ParsePrefix(slot.Spec.Pool)
	return err == nil && slot.Spec.AddressSpace == w.space && pool.Addr().Is4() == w.pool.Addr().Is4()
}

// adoptSlot makes an address the interface already holds count against
// its namespace's quota. An address claimed before quotas were kept per
// address space, or before the cap was set, holds no slot of the space:
// the interface takes one as soon as one is free. A full quota never takes
// a held address away (the pod keeps running with it); the namespace then
// gets no new address of the space until it is below the cap again.
func (a *Allocator) adoptSlot(ctx context.Context, owner Owner, network, iface string, w want, q *quota) (*v1alpha1.IPClaim, error) {
	q.keepFormer(w)
	if q.keep(w) != nil || q.max <= 0 {
		return nil, nil
	}
	slot, err := a.ensureSlot(ctx, owner, network, iface, w, q)
	var over *QuotaExceededError
	if errors.As(err, &over) {
		return nil, nil
	}
	return slot, err
}

// unused are the held slots no wanted address uses.
func (q *quota) unused() []*v1alpha1.IPClaim {
	var out []*v1alpha1.IPClaim
	for i := range q.held {
		if !q.used[i] {
			out = append(out, &q.held[i])
		}
	}
	return out
}

// ensureSlot makes sure the interface holds one of its namespace's quota
// slots of w's address space and family before an address is taken there, and returns the
// slot when this call created it. Slots are numbered below the cap and a
// slot's name is the reservation, as an address's is: however many
// allocators race, at most max pod interfaces of a namespace hold a slot
// of a pool, so at most max hold an address taken under the quota. Like a
// pool walk it tries at most maxProbes slots from a hashed, resumable
// offset; when all are held it lists the namespace's slots (slotsTaken)
// and tries the free ones by the same rule (pickFree); it takes over a
// slot of a dead pod of its own node, and otherwise fails with
// QuotaExceededError, leaving the namespace's pool in backoff only when
// no slot was free.
func (a *Allocator) ensureSlot(ctx context.Context, owner Owner, network, iface string, w want, q *quota) (*v1alpha1.IPClaim, error) {
	if q.keep(w) != nil {
		return nil, nil
	}
	qk := quotaKey(owner.Namespace, w.space)
	over := func() error {
		return &QuotaExceededError{Network: network, Namespace: owner.Namespace, Space: w.space, Pool: w.poolText, Max: q.max,
			RetryAfter: a.backoff.failed(qk, w.pool)}
	}
	if wait := a.backoff.wait(qk, w.pool); wait > 0 {
		return nil, &QuotaExceededError{Network: network, Namespace: owner.Namespace, Space: w.space, Pool: w.poolText, Max: q.max, RetryAfter: wait}
	}
	slots := hostRange{first: 0, count: uint64(q.max)}
	key := owner.UID + "/" + network + "/" + iface + "/" + w.space + "/" + w.pool.String() + "/slot"
	start := a.ledger.ResumeAt(key) % slots.count
	wk := walkFrom(slots, key, start)
	tries := pickFree(wk, func(uint64) bool { return false }, maxProbes)
	whole := wk.visited == slots.count
	ok, fresh, held, err := a.slotFirst(ctx, owner, network, iface, w, tries)
	if err == nil && !ok && !whole {
		var busy map[uint64]bool
		if busy, err = a.slotsTaken(ctx, owner.Namespace, w); err == nil {
			tries = pickFree(walkFrom(slots, key, start), func(k uint64) bool { return busy[k] }, maxProbes)
			whole = len(tries) == 0
			var more []taken
			ok, fresh, more, err = a.slotFirst(ctx, owner, network, iface, w, tries)
			held = append(held, more...)
		}
	}
	if err != nil {
		return nil, err
	}
	if ok {
		a.ledger.SetResume(key, 0)
		a.backoff.succeeded(qk, w.pool)
		return fresh, nil
	}
	a.ledger.SetResume(key, (start+wk.visited)%slots.count)
	won, fresh, err := a.reclaimFromDead(ctx, owner, held, a.tryClaim)
	switch {
	case err != nil:
		return nil, err
	case won != nil:
		return fresh, nil
	case !whole:
		// The free slots listed were taken a moment before by other
		// allocators: tried again at once, not put in backoff.
		return nil, &QuotaExceededError{Network: network, Namespace: owner.Namespace, Space: w.space, Pool: w.poolText, Max: q.max}
	}
	return nil, over()
}

// slotFirst tries to create each quota slot of tries in turn: ok reports
// whether the interface holds one now, fresh is the slot when this call
// created it, held the slots it found held.
func (a *Allocator) slotFirst(ctx context.Context, owner Owner, network, iface string, w want, tries []uint64) (ok bool, fresh *v1alpha1.IPClaim, held []taken, err error) {
	for _, k := range tries {
		if err := ctx.Err(); err != nil {
			return false, nil, nil, err
		}
		slot := newSlot(owner, network, iface, w, int32(k))
		ok, fresh, cur, err := a.tryClaim(ctx, slot.DeepCopy())
		if err != nil || ok {
			return ok, fresh, nil, err
		}
		held = append(held, taken{tried: slot, cur: cur})
	}
	return false, nil, held, nil
}

// newSlot is quota slot k of the owner's namespace in w's address space
// and family, held by one pod interface.
func newSlot(owner Owner, network, iface string, w want, k int32) *v1alpha1.IPClaim {
	c := claimFor(owner, network, iface, w)
	c.Name = SlotName(w.space, w.pool, owner.Namespace, int(k))
	c.Spec.Slot = &k
	return c
}

// splitSlots separates a pod interface's address claims from its quota
// slots.
func splitSlots(claims []v1alpha1.IPClaim) (addrs, slots []v1alpha1.IPClaim) {
	for _, c := range claims {
		if c.Spec.Slot != nil {
			slots = append(slots, c)
		} else {
			addrs = append(addrs, c)
		}
	}
	return addrs, slots
}

// quotaKey keys a namespace's quota of an address space in the pool
// backoff, apart from every network (a network name is a DNS label and
// holds no slash).
func quotaKey(namespace, space string) string { return "quota/" + namespace + "/" + space }
