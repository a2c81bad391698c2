package simnode

import (
	"context"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
)

// The earlier design, for the scale bench's comparison only. Its code is
// gone from the agent; OldDesign re-adds, around today's agent, the three
// behaviours that made its cost grow with the cluster, as they were:
//
//   - the agent's cache held every IPClaim of the cluster (no node
//     selector);
//   - every agent swept every claim of the cluster at start (readiness
//     waited for it) and every sweep period, with a live GET of each
//     holder pod (the deletes of dead claims are left out: the bench has
//     none while it measures);
//   - every resync of an attached pod read each of its claims live.
//
// Everything else (allocation by create, pool backoff, status writes) is
// today's, so the comparison isolates what grows with the cluster.

// oldCacheOptions is CacheOptions without the IPClaim node selector.
func oldCacheOptions(node string, scoped cache.Options) cache.Options {
	o := scoped
	o.ByObject = map[client.Object]cache.ByObject{}
	for obj, by := range scoped.ByObject {
		if _, isClaim := obj.(*v1alpha1.IPClaim); !isClaim {
			o.ByObject[obj] = by
		}
	}
	return o
}

// oldLoops runs the sweep and the per-resync reads of the old design.
type oldLoops struct {
	n                 *Node
	direct            client.Client
	sweepEvery, every time.Duration
	swept             atomic.Bool
}

func (l *oldLoops) Start(ctx context.Context) error {
	if !l.n.Manager.GetCache().WaitForCacheSync(ctx) {
		return nil
	}
	lastSweep := time.Time{}
	for {
		if time.Since(lastSweep) >= l.sweepEvery {
			l.sweep(ctx)
			lastSweep = time.Now()
			l.swept.Store(true)
		}
		l.resyncReads(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(l.every):
		}
	}
}

// sweep is the old ipam.Sweep's reads: every claim of the cluster from the
// cache, then one live GET per distinct holder pod.
func (l *oldLoops) sweep(ctx context.Context) {
	var list v1alpha1.IPClaimList
	if err := l.n.Manager.GetCache().List(ctx, &list); err != nil {
		return
	}
	seen := map[string]bool{}
	for _, c := range list.Items {
		p := c.Spec.Pod
		if seen[p.UID] {
			continue
		}
		seen[p.UID] = true
		var pod corev1.Pod
		_ = l.direct.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Name}, &pod)
	}
}

// resyncReads is the old per-resync check that each claim of an attached
// pod of this node still exists, read live.
func (l *oldLoops) resyncReads(ctx context.Context) {
	var list v1alpha1.IPClaimList
	if err := l.n.Manager.GetCache().List(ctx, &list, client.MatchingLabels{v1alpha1.NodeLabel: l.n.Name}); err != nil {
		return
	}
	for i := range list.Items {
		var c v1alpha1.IPClaim
		_ = l.direct.Get(ctx, client.ObjectKeyFromObject(&list.Items[i]), &c)
	}
}
