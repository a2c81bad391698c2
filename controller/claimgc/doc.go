// Package claimgc is podnet-controller's garbage collection of IPClaims
// (GC) and MACClaims (MACGC): a claim whose pod is gone (no pod of that
// namespace, name and UID), or whose live pod cannot hold it (forged.go:
// another node or namespace than the pod's, a name that is not what it
// holds, an interface the pod's approval does not name), for longer than
// a grace period is deleted, with its UID as a precondition; a forged one
// with a Warning Event and a metric. Claims reserved for a StatefulSet
// (reservations.go) stay until it scaled below their ordinal or went, and their
// releaseAfter passed. The collectors are driven by pod deletions and
// claim creations, plus a sweep of the caches on start and every period
// (periodicPass); the last word before a delete is a live read of the
// pod, so a lagging cache never frees a live pod's address.
package claimgc
