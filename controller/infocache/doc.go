// Package infocache holds podnet-controller's own caches of every pod
// (PodCache) and every IPClaim (ClaimCache) of the cluster, the floor its
// reconcilers stand on. Each keeps a small record per object (PodInfo,
// ClaimInfo) instead of the API type, over one paged cache: the initial
// list arrives in pages decoded straight into records, objects arriving by
// watch are reduced as they arrive, and the cache runs on every replica,
// leader or not, so that a new leader starts warm.
//
// Controllers hear of them through sources: pod deletions
// (PodCache.Deletions) and claims created or deleted after the initial
// list (ClaimCache.Source).
package infocache
