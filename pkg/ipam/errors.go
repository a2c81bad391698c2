package ipam

import "fmt"

// ExhaustedError says that every usable address of a pool is claimed and
// none of the holders checked was dead.
// The agent turns it into a pod condition and an event (errors.As).
type ExhaustedError struct {
	Network string
	// Pool is the pool as approved.
	Pool string
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("pool %s of network %q is exhausted: every usable address is claimed", e.Pool, e.Network)
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
