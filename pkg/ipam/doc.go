// Package ipam allocates pod addresses cluster-wide by creating IPClaim
// objects, one per address and address space (ClaimName), and caps the
// addresses one namespace holds in an address space with quota slots, one
// IPClaim per slot (SlotName).
//
// # What holds
//
// No duplicates, by construction. Creating the claim is the reservation: the
// API server refuses a second object of the same name, so two pod
// interfaces never hold the same address in one address space, whatever
// the number of allocators, their caches or their crashes. There is no
// lock and no shared pool object; allocators only contend when they try
// the very same address, and they start from a hashed per-interface offset
// so that is rare. Allocation asks no cache whether an address is free: it
// tries to create the claim, and a refused create means taken. Each
// attempt first tries a bounded number of addresses (maxProbes) along the
// interface's walk, which in a pool with room finds a free one at once.
// When every one of them is held, the pool is crowded: the attempt lists
// the claims of the address space once, from the API server's watch cache
// (the only read of other nodes' claims, claimedIn), and tries the first
// addresses along the same walk that no claim holds (freeInPool, the one
// picking rule, which quota slots follow too). A pool is reported
// exhausted, and put in backoff (PoolBackoff), only when the walk or the
// list covered all of it and found nothing free, so a pool with one free
// address in a thousand gives it out on the next attempt instead of
// waiting for random tries to meet it; an attempt whose listed candidates
// were all taken a moment before by other allocators is tried again at
// once. What a crowded pool costs per attempt stays bounded: at most
// twice maxProbes creates and one list. The only reads from a cache are
// of the pod's own claims, by label, which an agent's cache (holding only
// its node's claims) serves; Release adds the claims
// the allocator created itself, since a lagging cache would miss one
// created a moment earlier, and both leave out the claims it deleted
// itself. Every delete carries the claim's UID as a precondition, so
// releasing and reclaiming never remove a claim that was re-created on the
// same name.
//
// # Address spaces
//
// What two pods must never share is an address on one layer-2 segment: the
// address space of an approved interface, SpaceName (the
// bridge by name, or the master link), which the webhook signs into the
// approval and SpaceOf checks or derives for the agent. A claim is named
// after the address and its space, so every network and profile on one
// bridge shares one set of addresses, overlapping pools or not, while two
// bridges hand out the same CIDR independently. Keying by what tenants
// type (the network name) would let two profiles on one bridge hand out one
// address twice; keying by the pool would miss overlaps of unequal pools;
// keying by the address alone, as claims once were, made the cluster one
// space, so the same range could not serve two isolated bridges.
//
// # Quota per namespace and address space
//
// The approval carries the quota of its space (ApprovedIPAM.MaxPerNamespace):
// the webhook's policy takes the strictest ipam.maxAddressesPerNamespace of
// every profile network in that space (or a default when more than one
// namespace can draw from it), so a pod gets the same cap whichever
// profile it came through. Before an address is taken under a cap, the
// interface takes one of the namespace's quota slots of the space and the
// address's IP family: an IPClaim named
// "<space>.<namespace>.<family>.<k>" with k below the cap. As with
// addresses, the name is the reservation, so however allocators
// interleave, at most max interfaces of a namespace hold a slot of a
// space and family, and an address is taken only by an interface holding
// one: no namespace ever holds more than max addresses of a family in a
// space, through however many networks and profiles. The count needs no
// cluster-wide cache: an allocation costs at most maxProbes more creates,
// and when the namespace is so close to its cap that they are all held,
// one list of the namespace's claims in the space and as many creates
// again, picking free slots by the rule addresses follow. A slot goes with its address (Release deletes addresses
// before slots, so the count never dips below what is held), and a slot of
// a dead pod is taken over or collected like an address claim. When no
// slot is free, Ensure fails with QuotaExceededError and the namespace's
// quota of that space is put in backoff. An address the interface already
// holds without a slot of its space (claimed before a cap was set, or
// before quotas were kept per space) takes one when one is free, and is
// never taken away when none is.
//
// # Claims of earlier versions
//
// Claims named "<address>" (FormerClaimName: one address space for the
// whole cluster) or "<network>.<address>" (LegacyClaimName), and slots
// named "<pool>.<namespace>.<k>" (FormerSlotName), keep their addresses
// across an agent upgrade: the pod that holds one finds it by its labels,
// as before, and keeps using it, and its slot stays with it; they are
// released with the pod's other claims. Unless LookForLegacyClaims found
// none left when the allocator started (they lack
// v1alpha1.AddressSpaceLabel, which every claim made now carries), after a
// new claim is created the allocator reads both former names of that
// address and gives the address up when another pod interface holds one:
// an address held under a former name is held in every address space, so
// it is never handed out twice during the upgrade. An agent of an earlier
// version does not look for the new names, so agents of the two versions
// must not allocate side by side: roll the agents out whole (or stop the
// old ones) before pods of the new scheme attach.
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
// # Claims reserved for a StatefulSet
//
// A claim made for a pod of a StatefulSet on a network with
// ipam.persistent carries a v1alpha1.StatefulSetReservation (ReservationOf): it is not
// dead when its pod is gone. Release of a whole pod leaves it, and no
// allocator takes it over from its dead pod; the next pod of the same
// namespace and name whose controller is the same StatefulSet takes it
// over (Adopt, MayAdopt) by an update that writes its UID and node into
// the claim, the one change the CRD allows a claim, so the address is never
// free in between. podnet-controller alone releases it, once the
// StatefulSet no longer holds it (StatefulSetKeeps) and ReleaseAfter has
// passed.
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
// judge a holder dead from a cached read. Its only memory is the ledger of
// the claim engine it shares with pkg/macpool (pkg/claims): the claims it
// created and has not released yet, those it deleted lately, and where
// each interface's walks stopped.
//
// # Permissions
//
// The agent's role needs, mirrored in the agent package as markers:
//
//	+kubebuilder:rbac:groups=podnet.io,resources=ipclaims,verbs=get;list;watch;create;delete;update
//	+kubebuilder:rbac:groups="",resources=pods,verbs=get
package ipam
