package controller

import (
	"context"
	"runtime/debug"

	"podnet.io/podnet/controller/infocache"
)

// startMemory hands back to the OS, once both caches have synced, the
// memory their initial lists used: pages of JSON read and dropped, pages
// of items the informers copied into their stores. Left to the runtime,
// that memory is returned only as the heap shrinks below the goal GOGC
// sets, slowly; the cached PodInfos and ClaimInfos themselves stay. It
// runs on every replica, as the caches do.
type startMemory struct {
	pods   *infocache.PodCache
	claims *infocache.ClaimCache
}

// Start implements manager.Runnable.
func (s startMemory) Start(ctx context.Context) error {
	if s.pods.WaitForSync(ctx) && s.claims.WaitForSync(ctx) {
		debug.FreeOSMemory()
	}
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (startMemory) NeedLeaderElection() bool { return false }
