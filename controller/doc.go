// Package controller is podnet-controller: the cluster-wide work that runs
// once, in one leader-elected process, instead of in every node agent.
// Setup registers each reconciler from its room; the rooms stand on the
// controller's own caches and never import each other (test/layering):
//
//   - controller/infocache: informers of every pod and every IPClaim of
//     the cluster, keeping a PodInfo each (identity, node and approved
//     interface/network pairs with their profiles and addresses, and the
//     labels of pods on a network, decoded from the list without building
//     a Pod) and a ClaimInfo each (name, UID, resourceVersion, the labels
//     forgery reads and the spec), warm on every replica.
//   - controller/claimgc: garbage collection of IPClaims (GC) and
//     MACClaims (MACGC) whose pod is gone, or whose live pod cannot hold
//     them (forged), after a grace period and a live read of the pod, with
//     the claim's UID as a precondition; driven by pod deletions, claim
//     creations and a sweep on start and every period.
//   - controller/profilestatus: NetworkProfile status (StatusReconciler):
//     Ready with the reason and fields when a profile is invalid or clashes
//     with another, observedGeneration, and per network and pool the
//     addresses in use and available, written only when it changed.
//   - controller/deviceclasses: one DeviceClass per DRA network of each
//     profile, and only those (admission policy
//     podnet-controller-deviceclasses).
//   - controller/resourceclaims: the release of DRA ResourceClaims holding
//     podnet.io devices that no agent will prepare (namespace not opted
//     in, or no approval), once their pods waited, bound and never
//     started, for the grace period.
//   - controller/holdchoice: the hold choice of --hold-pods=auto, from the
//     Nodes whose agent reported NRI enforced, written on the ConfigMap the
//     webhook watches.
//   - controller/netpolicies: one NodePolicy per node, named after it,
//     from the MultiNetworkPolicies, the profiles' policy floors and the
//     pods on each network (pkg/netpolicy), recomputed for what changed
//     and written when it differs; Warning Events on the policies for
//     what podnet cannot honour.
//   - Prometheus gauges of pool usage and counters of the collection
//     (Metrics).
//
// What it must not do: touch any node (it has no host access), decide what
// a pod may have (the webhook does), or keep more of a pod than the claims
// and the network policy need.
package controller
