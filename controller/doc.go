// Package controller is podnet-controller: the cluster-wide work that runs
// once, in one leader-elected process, instead of in every node agent.
//
//   - IPClaim garbage collection (gc.go): a claim whose pod is gone (no pod
//     of that namespace, name and UID), or whose live pod cannot hold it
//     (forged.go: another node or namespace than the pod's, a name that is
//     not what it holds, an interface the pod's approval does not name),
//     for longer than a grace period is deleted, with its UID as a
//     precondition; a forged one with a Warning Event and a metric. It is
//     driven by pod deletions and claim creations, plus a sweep of the
//     caches on start and every period; pods and claims are cached in
//     informers of the controller's own (controller/infocache) as a
//     PodInfo each (identity, node and approved interface/network pairs,
//     decoded from the list without building a Pod) and a ClaimInfo each
//     (name, UID, resourceVersion, the labels forgery reads and the
//     spec). The last word before a delete is a live read of
//     the pod, so a lagging cache never frees a live pod's address.
//   - NetworkProfile status (status.go): conditions (Ready, with the reason
//     and fields when the profile is invalid or clashes with another),
//     observedGeneration and per network and pool the addresses in use and
//     available, computed by the pure planStatus and written only when it
//     changed, never on a timer.
//   - DeviceClasses (controller/deviceclasses): one per DRA network of
//     each profile, and only those (admission policy
//     podnet-controller-deviceclasses).
//   - ResourceClaim release (controller/resourceclaims): an allocated claim holding
//     podnet.io devices that no agent will prepare (its namespace is not
//     opted in, or it has no approval) gets its allocation and
//     reservations cleared once its pods waited, bound and never started,
//     for the grace period, so that it does not hold the node's devices.
//   - MACClaim garbage collection (macgc.go): the MACs and MAC quota slots
//     of pods that are gone, as for IPClaims: after the grace period and a
//     live read, with the claim's UID as a precondition.
//   - The hold choice of --hold-pods=auto (controller/holdchoice): the Nodes
//     counted through a metadata-only informer, and those whose agent
//     reported NRI enforced; hold.ChooseAuto's answer written on the
//     ConfigMap the webhook watches.
//   - Prometheus gauges of pool usage and counters of the collection.
//
// What it must not do: touch any node (it has no host access), decide what
// a pod may have (the webhook does), or keep more of a pod than the claims
// need.
package controller
