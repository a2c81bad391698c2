package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

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
	"podnet.io/podnet/pkg/pagedlist"
)

// Name names the component: its user agent, its leader election lease and
// its log lines.
const Name = "podnet-controller"

// The controller's leader election reads and renews one Lease, its own,
// in its own namespace (kustomize moves the Role there). It may not create
// it: RBAC cannot limit a create to a name, so the install creates the
// Lease (deploy/podnet/controller.yaml) and the controller only takes it.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;update,resourceNames=podnet-controller,namespace=podnet-system

// Cache field indexes on IPClaims.
const (
	// NetworkIndex indexes claims by spec.network, for pool usage.
	NetworkIndex = "spec.network"
	// PodUIDIndex indexes claims by spec.pod.uid, for pod deletions.
	PodUIDIndex = "spec.pod.uid"
)

// CacheOptions drop managedFields from everything cached, list in pages
// each trimmed as it arrives (pkg/pagedlist), and refuse reads that would
// start an informer nobody planned: pods are not in this cache at all
// (see PodCache), and a read of them through it fails.
func CacheOptions() cache.Options {
	return cache.Options{
		NewInformer:                 pagedlist.NewInformer,
		DefaultTransform:            cache.TransformStripManagedFields(),
		ReaderFailOnMissingInformer: true,
	}
}

// Options tune Setup.
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

// Setup registers the claim collector, its periodic pass and the profile
// status reconciler with mgr.
func Setup(ctx context.Context, mgr manager.Manager, o Options) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.IPClaim{}, NetworkIndex, func(o client.Object) []string {
		return []string{o.(*v1alpha1.IPClaim).Spec.Network}
	}); err != nil {
		return fmt.Errorf("index IPClaims by network: %w", err)
	}
	if err := idx.IndexField(ctx, &v1alpha1.IPClaim{}, PodUIDIndex, func(o client.Object) []string {
		return []string{o.(*v1alpha1.IPClaim).Spec.Pod.UID}
	}); err != nil {
		return fmt.Errorf("index IPClaims by pod UID: %w", err)
	}
	pods, err := setupPodCache(mgr)
	if err != nil {
		return err
	}
	gc := &GC{Client: mgr.GetClient(), Pods: pods, APIReader: mgr.GetAPIReader(), Events: mgr.GetEventRecorder(Name),
		Grace: o.Grace, Metrics: o.Metrics}
	periodic := make(chan event.GenericEvent)
	b := builder.ControllerManagedBy(mgr).
		Named("ipclaim-gc").
		For(&v1alpha1.IPClaim{}, builder.WithPredicates(predicate.Funcs{
			// Claims never change; a new one is looked at once.
			UpdateFunc: func(event.UpdateEvent) bool { return false },
			DeleteFunc: func(event.DeleteEvent) bool { return false },
		})).
		WatchesRawSource(pods.deletions(claimsOfPod(mgr.GetClient()))).
		WatchesRawSource(source.Channel(periodic, &handler.EnqueueRequestForObject{}))
	err = withStatefulSets(b, mgr.GetClient(), func() client.ObjectList { return &v1alpha1.IPClaimList{} }).
		Complete(gc)
	if err != nil {
		return fmt.Errorf("ipclaim-gc controller: %w", err)
	}
	if err := mgr.Add(&periodicPass{gc: gc, every: o.Period, out: periodic}); err != nil {
		return fmt.Errorf("ipclaim-gc periodic pass: %w", err)
	}
	if err := setupMACGC(ctx, mgr, pods, o); err != nil {
		return err
	}
	return setupStatus(mgr, o.Metrics)
}

// setupStatus registers the NetworkProfile status reconciler. A profile's
// status depends on every other profile (conflicts) and on the claims of
// its networks, so a spec change requeues every profile and a claim's
// creation or deletion requeues the profiles offering its network. Status
// writes change no generation and so trigger nothing.
func setupStatus(mgr manager.Manager, m *Metrics) error {
	c := mgr.GetClient()
	allProfiles := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		return profileRequests(ctx, c, "")
	})
	byNetwork := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		return profileRequests(ctx, c, o.(*v1alpha1.IPClaim).Spec.Network)
	})
	err := builder.ControllerManagedBy(mgr).
		Named("networkprofile-status").
		For(&v1alpha1.NetworkProfile{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.NetworkProfile{}, allProfiles, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.IPClaim{}, byNetwork).
		Complete(&StatusReconciler{Client: c, Metrics: m})
	if err != nil {
		return fmt.Errorf("networkprofile-status controller: %w", err)
	}
	return nil
}

// profileRequests lists the profiles offering network ("" means all).
func profileRequests(ctx context.Context, c client.Reader, network string) []reconcile.Request {
	var list v1alpha1.NetworkProfileList
	if err := c.List(ctx, &list); err != nil {
		logf.FromContext(ctx).Error(err, "list NetworkProfiles")
		return nil
	}
	var out []reconcile.Request
	for _, p := range list.Items {
		for _, n := range p.Spec.Networks {
			if network == "" || n.Name == network {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
				break
			}
		}
		if network == "" && len(p.Spec.Networks) == 0 {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
		}
	}
	return out
}

// setupPodCache adds the pod cache to mgr, started on every replica, and
// makes the manager ready only once it synced.
func setupPodCache(mgr manager.Manager) (*PodCache, error) {
	pods, err := NewPodCache(mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(pods); err != nil {
		return nil, fmt.Errorf("pod cache: %w", err)
	}
	err = mgr.AddReadyzCheck("pod-cache", func(*http.Request) error {
		if !pods.HasSynced() {
			return errors.New("pod cache not synced")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pod cache readiness: %w", err)
	}
	return pods, nil
}

// claimsOfPod maps a deleted pod to its IPClaims, through the index.
func claimsOfPod(c client.Reader) func(context.Context, *PodInfo) []reconcile.Request {
	return claimsOfPodIn(c, func() client.ObjectList { return &v1alpha1.IPClaimList{} }, PodUIDIndex)
}

// periodicPass feeds the collector, every period, the claims whose pod
// the cache does not hold. It runs only on the leader.
type periodicPass struct {
	gc    *GC
	every time.Duration
	out   chan<- event.GenericEvent
}

// Start implements manager.Runnable.
func (p *periodicPass) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("ipclaim-gc")
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(p.every):
		}
		events, err := p.gc.Candidates(ctx)
		if err != nil {
			log.Error(err, "periodic pass")
		}
		for _, e := range events {
			select {
			case p.out <- e:
			case <-ctx.Done():
				return nil
			}
		}
	}
}
