// Package controller is podnet-controller: the cluster-wide work that runs
// once, in one leader-elected process, instead of in every node agent.
//
//   - IPClaim garbage collection (gc.go): a claim whose pod is gone (no pod
//     of that namespace, name and UID) for longer than a grace period is
//     deleted, with its UID as a precondition. It is driven by pod
//     deletions and claim events, plus a periodic pass over the cache;
//     pods are watched as metadata only. The last word before a delete is
//     a live read of the pod, so a lagging cache never frees a live pod's
//     address.
//   - NetworkProfile status (status.go): conditions (Ready, with the reason
//     and fields when the profile is invalid or clashes with another),
//     observedGeneration and per network and pool the addresses in use and
//     available, computed by the pure planStatus and written only when it
//     changed, never on a timer.
//   - Prometheus gauges of pool usage and counters of the collection.
//
// What it must not do: touch any node (it has no host access), decide what
// a pod may have (the webhook does), or read pods beyond their metadata.
package controller
