package controller

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/controller/deviceclasses"
	"podnet.io/podnet/controller/holdchoice"
	"podnet.io/podnet/controller/infocache"
	"podnet.io/podnet/controller/resourceclaims"
	"podnet.io/podnet/pkg/pagedlist"
	"podnet.io/podnet/pkg/policy"
)

// Name names the component: its user agent, its leader election lease and
// its log lines (v1alpha1.ControllerName).
const Name = v1alpha1.ControllerName

// The controller's leader election reads and renews one Lease, its own,
// in its own namespace (kustomize moves the Role there). It may not create
// it: RBAC cannot limit a create to a name, so the install creates the
// Lease (deploy/podnet/controller.yaml) and the controller only takes it.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;update,resourceNames=podnet-controller,namespace=podnet-system

// CacheOptions drop managedFields from everything cached, list in pages
// each trimmed as it arrives (pkg/pagedlist), and refuse reads that would
// start an informer nobody planned: pods and IPClaims are not in this
// cache at all (see PodCache and ClaimCache), and a read of them through
// it fails.
func CacheOptions() cache.Options {
	return cache.Options{
		NewInformer:                 pagedlist.NewInformer,
		DefaultTransform:            cache.TransformStripManagedFields(),
		ReaderFailOnMissingInformer: true,
		ByObject:                    map[client.Object]cache.ByObject{holdchoice.NodeMeta(): {Transform: holdchoice.TrimNodeMeta}},
	}
}

// Options tune Setup.
type Options struct {
	// Grace is how long a claim's pod must have been gone before the
	// claim is deleted, and how long a pod must have waited, bound and
	// never started, before the ResourceClaim it waits for is released
	// (ClaimRelease).
	Grace time.Duration
	// Period is how often the whole cache is looked over for claims
	// whose pod is gone (deletions are seen as they happen; this catches
	// those missed while no controller ran).
	Period  time.Duration
	Metrics *Metrics
	// HoldChoiceNamespace is where the choice of --hold-pods=auto is
	// written (HoldChoice); "" writes none.
	HoldChoiceNamespace string
	// StatusBatch is how long a profile's status waits for more claims
	// before it writes their usage (podnet-controller's default:
	// DefaultStatusBatch); zero writes at once.
	StatusBatch time.Duration
}

// DefaultStatusBatch gathers the claims of a burst of pods into one status
// write of each profile offering their network. Every write reaches every
// watcher of NetworkProfiles (each node's agent, each webhook replica), so
// one write per claim would cost a 5,000-node cluster 5,000 watch events
// per pod started. Spec changes (validity, conflicts) are written at once.
const DefaultStatusBatch = 2 * time.Second

// Setup registers the claim collector, its sweeps and the profile status
// reconciler with mgr.
func Setup(ctx context.Context, mgr manager.Manager, o Options) error {
	pods, err := setupPodCache(mgr)
	if err != nil {
		return err
	}
	claims, err := setupClaimCache(mgr)
	if err != nil {
		return err
	}
	if err := mgr.Add(startMemory{pods: pods, claims: claims}); err != nil {
		return fmt.Errorf("start memory: %w", err)
	}
	// The sweep reads StatefulSets; their informer starts with the cache,
	// before any controller asks for it.
	if _, err := mgr.GetCache().GetInformer(ctx, &appsv1.StatefulSet{}); err != nil {
		return fmt.Errorf("StatefulSet informer: %w", err)
	}
	gc := &GC{Client: mgr.GetClient(), Claims: claims, Pods: pods, APIReader: mgr.GetAPIReader(), Events: mgr.GetEventRecorder(Name),
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
	err = withStatefulSets(b, claims.RequestsOfStatefulSet).Complete(gc)
	if err != nil {
		return fmt.Errorf("ipclaim-gc controller: %w", err)
	}
	sweeps := &periodicPass{gc: gc, every: o.Period, out: periodic, after: added, cache: mgr.GetCache()}
	if err := mgr.Add(sweeps); err != nil {
		return fmt.Errorf("ipclaim-gc periodic pass: %w", err)
	}
	if err := setupMACGC(ctx, mgr, pods, o); err != nil {
		return err
	}
	if err := deviceclasses.Setup(mgr); err != nil {
		return err
	}
	if err := resourceclaims.Setup(mgr, o.Grace); err != nil {
		return err
	}
	if o.HoldChoiceNamespace != "" {
		if err := holdchoice.Setup(mgr, o.HoldChoiceNamespace); err != nil {
			return err
		}
	}
	return setupStatus(mgr, claims, o.Metrics, o.StatusBatch)
}

// setupStatus registers the NetworkProfile status reconciler. A profile's
// status depends on every other profile (conflicts) and on the claims of
// its networks, so a spec change requeues every profile at once and a
// claim's creation or deletion requeues the profiles with a network of its
// address space batch later (the claims of that time share the reconcile). Status writes
// change no generation and so trigger nothing.
func setupStatus(mgr manager.Manager, claims *infocache.ClaimCache, m *Metrics, batch time.Duration) error {
	c := mgr.GetClient()
	allProfiles := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		return profileRequests(ctx, c, nil)
	})
	// A claim counts in every network of its address space, whatever the
	// network's name (policy.ClaimInSpace): those profiles are requeued.
	byNetwork := func(ctx context.Context, ci *infocache.ClaimInfo) []reconcile.Request {
		return profileRequests(ctx, c, func(n *v1alpha1.Network) bool {
			return policy.ClaimInSpace(ci.Spec.Network, ci.Spec.AddressSpace, n.Name, policy.NetworkSpace(n))
		})
	}
	err := builder.ControllerManagedBy(mgr).
		Named("networkprofile-status").
		For(&v1alpha1.NetworkProfile{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.NetworkProfile{}, allProfiles, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(claims.Source(byNetwork, byNetwork).After(batch)).
		Complete(&StatusReconciler{Client: c, Claims: claims, Metrics: m})
	if err != nil {
		return fmt.Errorf("networkprofile-status controller: %w", err)
	}
	return nil
}

// profileRequests lists the profiles with a network that counts (nil
// means all).
func profileRequests(ctx context.Context, c client.Reader, counts func(*v1alpha1.Network) bool) []reconcile.Request {
	var list v1alpha1.NetworkProfileList
	if err := c.List(ctx, &list); err != nil {
		logf.FromContext(ctx).Error(err, "list NetworkProfiles")
		return nil
	}
	var out []reconcile.Request
	for _, p := range list.Items {
		for i := range p.Spec.Networks {
			if counts == nil || counts(&p.Spec.Networks[i]) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
				break
			}
		}
		if counts == nil && len(p.Spec.Networks) == 0 {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
		}
	}
	return out
}

// setupPodCache runs the controller's pod cache.
func setupPodCache(mgr manager.Manager) (*infocache.PodCache, error) {
	pods, err := infocache.NewPodCache(mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	return pods, infocache.AddToManager(mgr, "pod-cache", pods)
}

// setupClaimCache runs the controller's IPClaim cache.
func setupClaimCache(mgr manager.Manager) (*infocache.ClaimCache, error) {
	claims, err := infocache.NewClaimCache(mgr.GetConfig(), mgr.GetScheme())
	if err != nil {
		return nil, err
	}
	return claims, infocache.AddToManager(mgr, "claim-cache", claims)
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
