package ipam

import (
	"fmt"
	"net/netip"
	"time"
)

// ExhaustedError says that no address of a pool could be claimed: every
// address tried is held and none of their holders was dead. When the whole
// pool was covered (walked, or listed) and none was free, it is full, and
// only then put in backoff.
// The agent turns it into a pod condition and an event (errors.As), and
// tries again after RetryAfter.
type ExhaustedError struct {
	Network string
	// Pool is the pool as approved.
	Pool string
	// Tried is how many addresses this attempt tried; Whole says that the
	// attempt found no usable address of the pool free (it tried them all,
	// or the pool's claims held them all), or that the pool waits in
	// backoff since an attempt found that.
	Tried int
	Whole bool
	// RetryAfter, when not zero, is how long the pool is left alone before
	// the next attempt (the allocator's PoolBackoff).
	RetryAfter time.Duration
}

func (e *ExhaustedError) Error() string {
	msg := fmt.Sprintf("pool %s of network %q is exhausted: every usable address is claimed", e.Pool, e.Network)
	if !e.Whole {
		msg = fmt.Sprintf("pool %s of network %q is nearly exhausted: the %d addresses tried are claimed", e.Pool, e.Network, e.Tried)
	}
	// RetryAfter stays out of the message: the message becomes the pod's
	// condition, which must not change (and be written again) on every try.
	return msg
}

// ConflictError says that an asked-for static address is held by another
// pod (or by another interface of the same pod). It names the IPClaim, not
// the other pod: the message reaches the tenant, and the other pod may
// belong to another tenant. An admin finds the holder with
// `kubectl get ipclaim <name>`.
type ConflictError struct {
	Network string
	Address string
	// Claim is the name of the IPClaim that holds the address.
	Claim string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("address %s of network %q is already claimed by another pod or interface (IPClaim %q)", e.Address, e.Network, e.Claim)
}

// QuotaExceededError says that the pod's namespace already holds as many
// addresses of one family of an address space as its quota (the
// strictest ipam.maxAddressesPerNamespace of the profiles on it) allows: every quota slot tried is held by a live pod of the namespace.
// The agent turns it into the condition reason QuotaExceeded and an event,
// and tries again after RetryAfter, so the pod attaches once a pod of its
// namespace frees an address of the pool.
type QuotaExceededError struct {
	Network   string
	Namespace string
	// Space is the address space the quota counts in.
	Space string
	// Pool is the pool as approved.
	Pool string
	// Max is the cap (ipam.maxAddressesPerNamespace).
	Max int32
	// RetryAfter, when not zero, is how long to wait before trying again.
	RetryAfter time.Duration
}

func (e *QuotaExceededError) Error() string {
	family := "IPv6"
	if p, err := netip.ParsePrefix(e.Pool); err == nil && p.Addr().Is4() {
		family = "IPv4"
	}
	return fmt.Sprintf("namespace %q already holds %d %s addresses in address space %s (network %q, pool %s), its quota there (the strictest ipam.maxAddressesPerNamespace of the profiles on it); the pod waits until one is freed",
		e.Namespace, e.Max, family, e.Space, e.Network, e.Pool)
}
