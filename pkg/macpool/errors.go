package macpool

import "fmt"

// ExhaustedError says that no MAC of a network's range could be claimed:
// every MAC tried is held. Whole says the walk covered the whole range.
type ExhaustedError struct {
	Network string
	// Range is the approved range, "start-end".
	Range string
	Tried int
	Whole bool
}

func (e *ExhaustedError) Error() string {
	if e.Whole {
		return fmt.Sprintf("macRange %s of network %q is exhausted: all %d MACs are claimed", e.Range, e.Network, e.Tried)
	}
	return fmt.Sprintf("macRange %s of network %q is nearly exhausted: the %d MACs tried are claimed", e.Range, e.Network, e.Tried)
}

// ConflictError says that a static MAC is held by another pod interface.
// It names the MACClaim (the MAC itself) and, only when the holder is a
// pod of the same namespace, that pod: the message reaches the tenant, and
// another namespace's pod names belong to another tenant.
type ConflictError struct {
	Network string
	MAC     string
	// Holder is "pod <name>" in the asking pod's namespace, or "a pod of
	// another namespace".
	Holder string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("mac %s of network %q is already claimed by %s (MACClaim %q)", e.MAC, e.Network, e.Holder, claimNameOf(e.MAC))
}

// QuotaExceededError says that the pod's namespace already holds as many
// MACs of the network as the approval's macRange quota allows.
type QuotaExceededError struct {
	Network   string
	Namespace string
	Max       int32
}

func (e *QuotaExceededError) Error() string {
	return fmt.Sprintf("namespace %q already holds %d MACs of network %q, its quota (macRange.maxPerNamespace); the pod waits until one is freed", e.Namespace, e.Max, e.Network)
}
