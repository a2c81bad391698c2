package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"podnet.io/podnet/agent/peers"
	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/claims"
	"podnet.io/podnet/pkg/nsmeta"
)

// CacheOptions make the manager's informer cache hold only this node's
// pods (a field selector) and IPClaims (the v1alpha1.NodeLabel selector),
// so the API server filters and an agent's memory and watch traffic grow
// with its node, not with the cluster; and drop managedFields, which the
// agent never reads and which is a large share of a pod's memory, and of
// pods everything else the agent does not read (TrimPod). A read
// of any other type fails instead of quietly starting an informer over the
// whole cluster (ReaderFailOnMissingInformer): SetupWithManager starts the
// informers the agent plans for.
func CacheOptions(nodeName string) cache.Options {
	return cache.Options{
		DefaultTransform:            cache.TransformStripManagedFields(),
		ReaderFailOnMissingInformer: true,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:        {Field: fields.OneTermEqualSelector("spec.nodeName", nodeName), Transform: TrimPod},
			&v1alpha1.IPClaim{}:  {Label: labels.SelectorFromSet(labels.Set{v1alpha1.NodeLabel: nodeName})},
			&v1alpha1.MACClaim{}: {Label: labels.SelectorFromSet(labels.Set{v1alpha1.NodeLabel: nodeName})},
			nsmeta.Object():      {Transform: nsmeta.Trim},
			&corev1.Node{}:       {Transform: peers.Trim},
		},
	}
}

// SetupWithManager registers the reconciler and the node-local sweep with
// the manager, and the informers the agent reads from (see CacheOptions).
// concurrency is how many pods are configured at once.
func (r *Reconciler) SetupWithManager(mgr manager.Manager, concurrency int) (*Sweeper, error) {
	if r.NodeName == "" {
		return nil, errors.New("agent: node name must not be empty")
	}
	// The allocator lists the node's claims and the grant check reads
	// namespace labels and profiles from the cache; with
	// ReaderFailOnMissingInformer those informers must exist before the
	// first read. Creating them here, the pods' too (the controller would
	// start that one only when it starts), makes the cache sync that
	// readiness waits for include them all, so that no list or watch is
	// left for the first pod's attach. The node's NodePolicy's too,
	// where the API server serves NodePolicies.
	informers := []client.Object{&corev1.Pod{}, &v1alpha1.IPClaim{}, &v1alpha1.MACClaim{}, nsmeta.Object(), &v1alpha1.NetworkProfile{}}
	if r.NodePolicy {
		informers = append(informers, &v1alpha1.NodePolicy{})
	}
	// The allocators list one pod's claims per attach: through an
	// index, not a scan of the node's claims.
	for _, obj := range []client.Object{&v1alpha1.IPClaim{}, &v1alpha1.MACClaim{}} {
		if err := claims.IndexByPod(context.Background(), mgr.GetFieldIndexer(), obj); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	}
	for _, obj := range informers {
		if _, err := mgr.GetCache().GetInformer(context.Background(), obj); err != nil {
			return nil, fmt.Errorf("agent: %T informer: %w", obj, err)
		}
	}
	b := builder.ControllerManagedBy(mgr).
		Named(v1alpha1.AgentName).
		For(&corev1.Pod{}, builder.WithPredicates(podChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency})
	if r.SandboxWaits != nil {
		b = b.WatchesRawSource(r.SandboxWaits.Source())
		if err := mgr.Add(r.SandboxWaits); err != nil {
			return nil, fmt.Errorf("agent sandbox watch: %w", err)
		}
	}
	if r.Attaches != nil {
		b = b.WatchesRawSource(r.Attaches.Source())
	}
	if r.Claims != nil {
		b = b.WatchesRawSource(r.Claims.Source())
	}
	if r.Uninstall != nil {
		b = b.WatchesRawSource(r.Uninstall.Source(podstate.Urgent()))
	}
	if r.Carry != nil {
		b = b.WatchesRawSource(r.carrySource())
	}
	b = r.watchGrants(b)
	if r.NodePolicy {
		b = r.watchNodePolicy(b)
	}
	if err := b.Complete(r); err != nil {
		return nil, fmt.Errorf("agent controller: %w", err)
	}
	s := &Sweeper{Reconciler: r, Cache: mgr.GetCache(), Every: r.Resync}
	if err := mgr.Add(s); err != nil {
		return nil, fmt.Errorf("agent sweep: %w", err)
	}
	return s, nil
}

// Sweeper removes, at start and then periodically, the node objects of
// pods that no longer exist: the pods deleted while the agent was down, and
// those a failed detach left behind. It reads only the node-local pod
// cache and the node's links, so it costs the API server nothing and its
// first pass (which readiness waits for) takes the same time whatever the
// size of the cluster. The addresses of pods that are gone are freed by
// podnet-controller, which alone looks at every claim of the cluster.
type Sweeper struct {
	Reconciler *Reconciler
	Cache      cache.Cache
	// Every is the period of the node-local sweep (one netlink dump).
	Every time.Duration

	swept atomic.Bool
}

// Start implements manager.Runnable.
func (s *Sweeper) Start(ctx context.Context) error {
	if !s.Cache.WaitForCacheSync(ctx) {
		return ctx.Err()
	}
	log := logf.FromContext(ctx).WithName("sweep")
	every := s.Every
	if every <= 0 {
		every = 30 * time.Second
	}
	for {
		if removed, err := s.Sweep(ctx); err != nil {
			log.Error(err, "sweep")
		} else if len(removed) > 0 {
			log.Info("removed leftovers", "links", removed)
		}
		s.swept.Store(true)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// Ready is a readyz check: the agent is ready once the first sweep ran, so
// leftovers of its downtime are gone before it reports ready.
func (s *Sweeper) Ready(*http.Request) error {
	if !s.swept.Load() {
		return errors.New("first sweep not done")
	}
	return nil
}

// Sweep runs once: dataplane garbage collection with the pods in the cache
// as the live set. Start calls it; it is not safe for concurrent use.
func (s *Sweeper) Sweep(ctx context.Context) ([]string, error) {
	r := s.Reconciler
	live, err := s.liveUIDs(ctx)
	if err != nil {
		return nil, err
	}
	// A pod that reached the cache after the list may already have node
	// ends: look again before calling anything dead.
	relisted := false
	isLive := func(uid string) bool {
		if !live[uid] && !relisted {
			relisted = true
			if again, err := s.liveUIDs(ctx); err == nil {
				live = again
			} else {
				return true
			}
		}
		return live[uid]
	}
	removed, err := r.Dataplane.CollectGarbage(ctx, isLive)
	if err != nil {
		r.Metrics.error("sweep")
		return removed, err
	}
	return removed, nil
}

// liveUIDs are the pods of this node that may hold interfaces: everything
// in the cache that has not finished.
func (s *Sweeper) liveUIDs(ctx context.Context) (map[string]bool, error) {
	var pods corev1.PodList
	if err := s.Cache.List(ctx, &pods); err != nil {
		return nil, fmt.Errorf("list pods of node %q: %w", s.Reconciler.NodeName, err)
	}
	live := make(map[string]bool, len(pods.Items))
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			live[string(p.UID)] = true
		}
	}
	return live, nil
}
