// Package ipam allocates pod addresses cluster-wide by creating IPClaim
// objects, one per address, named after the address alone (ClaimName), and
// caps the addresses one namespace holds in a pool with quota slots, one
// IPClaim per slot (SlotName).
//
// # What holds
//
// No duplicates, by construction. Creating the claim is the reservation: the
// API server refuses a second object of the same name, so two pod
// interfaces never hold the same address, whatever the number of
// allocators, their caches or their crashes. There is no lock and no shared
// pool object; allocators only contend when they try the very same address,
// and they start from a hashed per-interface offset so that is rare.
// Allocation asks no cache whether an address is free: it tries to create
// the claim, and a refused create means taken. Each attempt tries at most
// a bounded number of addresses (maxProbes) and the next attempt of the
// same interface resumes the walk where it stopped, so what a crowded pool
// costs the API server per attempt is bounded; a pool with no free address
// can be put in backoff (PoolBackoff). The only reads from a cache are of
// the pod's own claims, by label, which an agent's cache (holding only its
// node's claims) serves; Release adds the claims the allocator created
// itself, since a lagging cache would miss one created a moment earlier,
// and both leave out the claims it deleted itself. Every delete carries
// the claim's UID as a precondition, so releasing and reclaiming never
// remove a claim that was re-created on the same name.
//
// # The identity of a pool
//
// What two pods must never share is an address on one layer-2 segment. A
// claim name made of the network name and the address ("data.10.0.0.7", as
// claims were named before) keys that by what tenants type: two profiles
// that both call a network "data" shared one claim space even with other
// bridges, and two networks with other names whose pools overlap could hand
// out one address twice. Keying by the pool's CIDR would still miss
// overlaps of unequal pools (10.0.0.0/24 inside 10.0.0.0/16), and keying by
// profile and network would let two profiles that offer the same bridge
// and pool hand out the same address. The one key that is right for every
// overlap is the address itself, so the claim is named after the address
// alone: the cluster is one address space, and a pool is only the part of
// it a network allocates from. Two profiles whose pools do not overlap
// never meet, whatever they name their networks; pools that overlap share
// the overlap, first come, first served. The price is that one range
// cannot be reused on two isolated segments of one cluster, which
// podnet-controller already reports as a profile conflict.
//
// # Quota per namespace
//
// A profile's ipam.maxAddressesPerNamespace (carried in the approval as
// ApprovedIPAM.MaxPerNamespace) caps the addresses the pods of one
// namespace hold in one pool. Before an address is taken under a cap, the
// interface takes one of the namespace's quota slots of the pool: an
// IPClaim named "<pool>.<namespace>.<k>" with k below the cap. As with
// addresses, the name is the reservation, so however allocators
// interleave, at most max interfaces of a namespace hold a slot of a pool,
// and an address is taken only by an interface holding one: no namespace
// ever holds more than max addresses taken under the cap. The count needs
// no cluster-wide cache and no list: an allocation costs at most maxProbes
// more creates. A slot goes with its address (Release deletes addresses
// before slots, so the count never dips below what is held), and a slot of
// a dead pod is taken over or collected like an address claim. The cap is
// per pool (the masked CIDR): every network and profile allocating from
// that same pool counts against it, each against its own cap. When no
// slot is free, Ensure fails with QuotaExceededError and the namespace's
// pool is put in backoff.
//
// # Claims made before the address alone named them
//
// Claims named "<network>.<address>" (LegacyClaimName) keep their
// addresses: the pod that holds one finds it by its labels, as before, and
// keeps using it. Unless LookForLegacyClaims found none left when the
// allocator started, after a new claim is created the allocator reads the
// legacy name of that address in the same network and gives the address
// up when another pod interface holds it there. Legacy claims are deleted
// with their pod's claims; they lack v1alpha1.NamespaceLabel, which every
// claim made now carries. They hold no quota slot, so addresses taken
// before a cap was set (or before this scheme) do not count against it.
// Agents of the old and the new scheme must not run side by side: an old
// agent does not look for new claims.
//
// Every claim carries the label v1alpha1.NodeLabel (the node of its pod),
// so each agent caches and watches only its own node's claims.
//
// Idempotent per (pod UID, network, interface). A pod's claims carry the
// label PodUIDLabel, so Ensure finds them without scanning the cluster, and
// the walk over a pool is a pure function of that key, so a retry after a
// crash between creating a claim and using it finds the same claim and
// returns the same address instead of taking a second one.
//
// # How addresses are freed, and by which mechanism
//
// Kubernetes' garbage collector never deletes a cluster-scoped object whose
// ownerReference names a namespaced owner such as a Pod (it records an
// OwnerRefInvalidNamespace event and keeps the object; the integration test
// TestIntegrationGarbageCollectorKeepsClusterScopedClaimOfPod shows it). A
// name that is unique cluster-wide needs a cluster-scoped object (or one
// fixed namespace, which a pod's ownerReference cannot reach either), so no
// object can be both the cluster-wide reservation and a dependent the
// garbage collector removes with the pod. A namespaced per-pod "lease"
// owned by the pod does not help: the reservation would still be a
// cluster-scoped object the collector leaves behind, and a tenant able to
// delete objects in its namespace could delete its lease and so hand its
// running pod's address to another pod.
//
// podnet therefore makes the pod itself the lease. A claim is live while
// the pod it names (namespace, name and UID) exists and is not in a terminal
// phase; once that pod is gone, Kubernetes never brings it back (UIDs are
// never reused, terminal phases are final), so its claims are dead for good
// and anyone may delete them. Addresses are freed by:
//
//   - the agent: Release on detach, on request change and on pod deletion
//     (and Ensure releases addresses an interface no longer asks for);
//   - any allocator, immediately, when every address an attempt tried is
//     held: it checks the holders of those addresses (Allocator.PodAlive, a
//     live read, at most maxProbes) and takes over one whose pod is dead;
//   - podnet-controller, which alone looks at every claim of the cluster:
//     it deletes the claims whose pod is gone (see the controller package),
//     so dead claims do not linger as objects.
//
// Claims carry no ownerReference: one naming the Pod would do nothing but
// make the garbage collector emit a warning event per pod deletion.
//
// Force-deleting a pod (grace period 0) removes the Pod object while its
// containers may still run for a moment; like every IPAM that keys on the
// Pod object, the address is then free a little before the old interface
// is gone.
//
// # What it must not do
//
// Touch any network interface (the dataplane does), decide what a pod may
// have (the webhook's approval did), or
// judge a holder dead from a cached read. Its only memory is the note of
// claims it created and has not released yet.
//
// # Permissions
//
// The agent's role needs, mirrored in the agent package as markers:
//
//	+kubebuilder:rbac:groups=podnet.io,resources=ipclaims,verbs=get;list;watch;create;delete
//	+kubebuilder:rbac:groups="",resources=pods,verbs=get
package ipam
