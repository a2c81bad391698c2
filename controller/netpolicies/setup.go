package netpolicies

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"time"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/controller/infocache"
	"podnet.io/podnet/pkg/netpolicy"
)

// DefaultBatch is how long a pass waits, after the first change, for
// more: the pods of a burst (each changing several times as it is bound
// and its networks are attached) share a few passes, and each node's
// object a few writes, instead of one each; a policy takes effect that
// much later.
const DefaultBatch = 150 * time.Millisecond

// key is the one work key: every change marks what it touches (index)
// and enqueues it; a pass takes all the marks.
var key = reconcile.Request{NamespacedName: types.NamespacedName{Name: "nodepolicies"}}

// Setup registers the NodePolicy reconciler: the pod index on pods (from
// the initial list on, on every replica), and on the leader the watches
// of profiles, namespaces, NodePolicies and, where the API server serves
// them, MultiNetworkPolicies. Without MultiNetworkPolicies it logs so and
// writes the floors alone until the API appears (policyAPI), then watches
// them too. The scheme must know MultiNetworkPolicy (mnp.AddToScheme).
func Setup(mgr manager.Manager, pods *infocache.PodCache, batch time.Duration) error {
	gvk := mnp.SchemeGroupVersion.WithKind("MultiNetworkPolicy")
	served := true
	if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if !meta.IsNoMatchError(err) {
			return fmt.Errorf("nodepolicies controller: %w", err)
		}
		served = false
		mgr.GetLogger().Info("the API server serves no k8s.cni.cncf.io/v1beta1 MultiNetworkPolicies: NodePolicies hold the profiles' policy floors only")
	} else if !mgr.GetScheme().Recognizes(gvk) {
		return fmt.Errorf("nodepolicies controller: the scheme does not know %s", gvk)
	}
	r := &Reconciler{Client: mgr.GetClient(), Events: mgr.GetEventRecorder(v1alpha1.ControllerName),
		index: newIndex(), verdicts: newVerdicts(), told: told{}}
	r.policies.Store(served)
	k := &kick{pods: pods, batch: batch}
	pods.OnChange(func(was, now *infocache.PodInfo) {
		if r.index.podChanged(was, now) {
			k.poke()
		}
	})
	b := builder.ControllerManagedBy(mgr).
		Named("nodepolicies").
		WatchesRawSource(k).
		Watches(&v1alpha1.NetworkProfile{}, marking(batch, r.profileChanged)).
		WatchesMetadata(&corev1.Namespace{}, marking(batch, r.namespaceChanged)).
		Watches(&v1alpha1.NodePolicy{}, marking(batch, r.nodePolicyChanged))
	if served {
		b = b.Watches(&mnp.MultiNetworkPolicy{}, marking(batch, r.policyChanged))
	}
	c, err := b.Build(r)
	if err != nil {
		return fmt.Errorf("nodepolicies controller: %w", err)
	}
	if served {
		return nil
	}
	watch := func() error {
		return c.Watch(source.Kind[client.Object](mgr.GetCache(), &mnp.MultiNetworkPolicy{}, marking(batch, r.policyChanged)))
	}
	return mgr.Add(&policyAPI{mapper: mgr.GetRESTMapper(), gvk: gvk, every: policyAPIPoll, found: func() error {
		if err := watch(); err != nil {
			return err
		}
		r.policies.Store(true)
		mgr.GetLogger().Info("the API server now serves MultiNetworkPolicies: enforcing them")
		return nil
	}})
}

// policyAPIPoll is how often the leader asks whether the API server
// serves MultiNetworkPolicies yet, while it does not: one discovery
// request, on one replica.
const policyAPIPoll = 10 * time.Second

// policyAPI waits, on the leader, for the API server to serve
// MultiNetworkPolicies (their CRD installed after podnet), then calls
// found once: tenants' policies are enforced without a restart.
type policyAPI struct {
	mapper meta.RESTMapper
	gvk    schema.GroupVersionKind
	every  time.Duration
	found  func() error
}

// Start implements manager.Runnable.
func (p *policyAPI) Start(ctx context.Context) error {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := p.mapper.RESTMapping(p.gvk.GroupKind(), p.gvk.Version); err == nil {
			return p.found()
		}
	}
}

// marking is a watch's handler: changed marks what a version change of
// an object (was nil: created; now nil: deleted) makes dirty and says
// whether a pass is due, which is enqueued batch later.
func marking(batch time.Duration, changed func(was, now client.Object) bool) handler.EventHandler {
	due := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], was, now client.Object) {
		if changed(was, now) {
			q.AddAfter(key, batch)
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			due(q, nil, e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			due(q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			due(q, e.Object, nil)
		},
	}
}

// sameGeneration says whether an update left the spec as it was.
func sameGeneration(was, now client.Object) bool {
	return was != nil && now != nil && was.GetGeneration() == now.GetGeneration()
}

// profileChanged marks the networks of a profile's old and new spec.
func (r *Reconciler) profileChanged(was, now client.Object) bool {
	if sameGeneration(was, now) {
		return false
	}
	var nets []string
	for _, o := range []client.Object{was, now} {
		if p, ok := o.(*v1alpha1.NetworkProfile); ok {
			for _, n := range p.Spec.Networks {
				nets = append(nets, n.Name)
			}
		}
	}
	r.index.mark(nets...)
	return len(nets) > 0
}

// namespaceChanged marks the networks with pods in a namespace whose
// labels changed (or that came or went).
func (r *Reconciler) namespaceChanged(was, now client.Object) bool {
	if was != nil && now != nil && maps.Equal(was.GetLabels(), now.GetLabels()) {
		return false
	}
	name := now
	if name == nil {
		name = was
	}
	return r.index.markNamespace(name.GetName())
}

// nodePolicyChanged marks a node whose object was created, deleted or
// changed by someone else than this controller (a pass writes it back);
// the events of its own writes are passed over.
func (r *Reconciler) nodePolicyChanged(was, now client.Object) bool {
	if sameGeneration(was, now) {
		return false
	}
	o, version := now, ""
	if o == nil {
		o, version = was, deletedVersion
	} else {
		version = o.GetResourceVersion()
	}
	if r.written.own(o.GetName(), version) {
		return false
	}
	r.index.markNode(o.GetName())
	return true
}

// policyChanged marks the networks of a policy's old and new
// policy-for. Every change is due a pass, even of a policy for no
// network: its refusal is reported there.
func (r *Reconciler) policyChanged(was, now client.Object) bool {
	if sameGeneration(was, now) && was.GetAnnotations()[netpolicy.PolicyForAnnotation] == now.GetAnnotations()[netpolicy.PolicyForAnnotation] {
		return false
	}
	for _, o := range []client.Object{was, now} {
		if p, ok := o.(*mnp.MultiNetworkPolicy); ok {
			nets, _ := netpolicy.Networks(p) // a refused policy-for names none
			r.index.mark(nets...)
		}
	}
	return true
}

// kick is the controller's source of pod changes: the pod cache's change
// handler pokes it, and it enqueues the key batch later. Started on the
// leader once the pod cache synced, it enqueues the key for the first,
// full pass.
type kick struct {
	pods  *infocache.PodCache
	batch time.Duration
	q     atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
}

// Start implements source.Source.
func (k *kick) Start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	k.q.Store(&q)
	q.AddAfter(key, k.batch)
	return nil
}

// WaitForSync implements source.SyncingSource: the first pass needs
// every pod.
func (k *kick) WaitForSync(ctx context.Context) error {
	if !k.pods.WaitForSync(ctx) {
		return fmt.Errorf("pod cache not synced: %w", ctx.Err())
	}
	return nil
}

// poke enqueues a pass, once the controller runs.
func (k *kick) poke() {
	if q := k.q.Load(); q != nil {
		(*q).AddAfter(key, k.batch)
	}
}
