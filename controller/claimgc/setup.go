package claimgc

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/controller/infocache"
)

// Options configure the claim collectors.
type Options struct {
	// Grace is how long a claim's pod must have been gone before the
	// claim is deleted.
	Grace time.Duration
	// Period is how often the whole cache is looked over for claims
	// whose pod is gone (deletions are seen as they happen; this catches
	// those missed while no controller ran).
	Period  time.Duration
	Metrics *Metrics
}

// Setup registers the IPClaim collector, its sweeps and the MACClaim
// collector with mgr, on the controller's caches.
func Setup(ctx context.Context, mgr manager.Manager, pods *infocache.PodCache, claims *infocache.ClaimCache, o Options) error {
	// The sweep reads StatefulSets; their informer starts with the cache,
	// before any controller asks for it.
	if _, err := mgr.GetCache().GetInformer(ctx, &appsv1.StatefulSet{}); err != nil {
		return fmt.Errorf("StatefulSet informer: %w", err)
	}
	gc := &GC{Client: mgr.GetClient(), Claims: claims, Pods: pods, APIReader: mgr.GetAPIReader(), Events: mgr.GetEventRecorder(v1alpha1.ControllerName),
		Grace: o.Grace, Metrics: o.Metrics}
	periodic := make(chan event.GenericEvent)
	// Claims are never changed but by a take-over; a new one is looked at
	// once, those listed on start by the first sweep.
	added := claims.Source(infocache.ClaimRequest, nil)
	b := builder.ControllerManagedBy(mgr).
		Named("ipclaim-gc").
		WatchesRawSource(added).
		WatchesRawSource(pods.Deletions(claims.RequestsOfPod)).
		WatchesRawSource(source.Channel(periodic, &handler.EnqueueRequestForObject{}))
	err := withStatefulSets(b, claims.RequestsOfStatefulSet).Complete(gc)
	if err != nil {
		return fmt.Errorf("ipclaim-gc controller: %w", err)
	}
	sweeps := &periodicPass{gc: gc, every: o.Period, out: periodic, after: added, cache: mgr.GetCache()}
	if err := mgr.Add(sweeps); err != nil {
		return fmt.Errorf("ipclaim-gc periodic pass: %w", err)
	}
	return setupMACGC(ctx, mgr, pods, o)
}

// periodicPass feeds the collector the candidates of a sweep (Candidates):
// once on start, as soon as the caches synced and the collector hears of
// new claims (after), and every period after. It runs only on the leader.
type periodicPass struct {
	gc    *GC
	every time.Duration
	out   chan<- event.GenericEvent
	after *infocache.ClaimSource
	cache cache.Cache
}

// Start implements manager.Runnable.
func (p *periodicPass) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("ipclaim-gc")
	if !p.after.Listening(ctx) || !p.cache.WaitForCacheSync(ctx) {
		return nil
	}
	for {
		events, err := p.gc.Candidates(ctx)
		if err != nil {
			log.Error(err, "sweep")
		}
		for _, e := range events {
			select {
			case p.out <- e:
			case <-ctx.Done():
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(p.every):
		}
	}
}
