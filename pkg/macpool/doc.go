// Package macpool hands out the MACs of a network's macRange cluster-wide
// by creating MACClaim objects, and caps the MACs one namespace holds from
// a network with quota slots, one MACClaim per slot.
//
// # What holds
//
// No MAC twice, by construction, as for addresses (package ipam): a MAC's
// claim is named after the MAC alone (v1alpha1.MACClaimName), so creating it
// is the reservation and the API server refuses a second one, whichever
// network, profile or range asked: two profiles whose ranges overlap never
// hand out one MAC twice. There is no lock and no pool object. A walk
// starts at an offset hashed from the pod interface (so allocators rarely
// try the same MAC) and tries at most maxProbes MACs per attempt; the next
// attempt of the interface carries on where it stopped. A static MAC the
// tenant asked for is claimed the same way, on a network without a range
// as the range of that MAC alone, so it cannot be a MAC another pod holds.
//
// A namespace holds at most the approval's MaxPerNamespace MACs of a
// network: before a MAC is claimed the interface takes one of the
// namespace's slots, a MACClaim named v1alpha1.MACSlotName(network,
// namespace, k) with k below the cap. The name is again the reservation,
// so no interleaving of allocators lets a namespace exceed it. A slot goes
// after its MAC on release.
//
// Idempotent per (pod UID, network, interface): a pod's claims carry the
// label v1alpha1.PodUIDLabel, so Ensure finds what the interface already
// holds (from the agent's cache of its node's claims, plus the claims this
// allocator created and the cache may not show yet) and returns the same
// MAC. Every delete carries the claim's UID as a precondition.
//
// # How MACs are freed
//
// The agent releases an interface's claims when it detaches it or the pod
// goes; podnet-controller deletes the claims of pods that are gone (the
// pod is the lease, as for IPClaims). An allocator never takes over a
// claim of a dead pod itself: a full range waits for the controller.
//
// # What it must not do
//
// Touch a network interface, decide what a pod may have (the approval did),
// or judge a claim's holder from a cache. Its memory is the ledger of the
// claim engine it shares with pkg/ipam (pkg/claims).
//
// # Permissions
//
// The agent's role needs, mirrored in the agent package as markers:
//
//	+kubebuilder:rbac:groups=podnet.io,resources=macclaims,verbs=get;list;watch;create;delete
package macpool
