package claimgc

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/controller/infocache"
)

// +kubebuilder:rbac:groups=podnet.io,resources=macclaims,verbs=get;list;watch;delete

// MACPodUIDIndex indexes MACClaims by spec.pod.uid, for pod deletions.
const MACPodUIDIndex = "spec.pod.uid"

// MACGC deletes the MACClaims (MACs and quota slots) of pods that are
// gone, as GC does for IPClaims: once the pod has been missing from the
// cache for Grace and a live read confirms it, with the claim's UID as a
// precondition. A controller that starts sees every claim once, so claims
// of pods deleted while none ran are collected too.
type MACGC struct {
	// Client reads claims from the cache and deletes.
	Client client.Client
	// Pods is the pod cache.
	Pods *infocache.PodCache
	// APIReader reads the API server itself, for the last check.
	APIReader client.Reader
	Grace     time.Duration
	Metrics   *Metrics

	graceTracker
}

// Reconcile implements reconcile.Reconciler for one MACClaim.
func (g *MACGC) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var claim v1alpha1.MACClaim
	if err := g.Client.Get(ctx, req.NamespacedName, &claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	gone, err := unheld(ctx, g.Pods, g.Client, &claim)
	if err != nil || !gone {
		g.clear(claim.UID)
		return reconcile.Result{}, err
	}
	if wait := graceOf(g.Grace, claim.Spec.StatefulSet) - g.now().Sub(g.candidate(claim.UID)); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	g.Metrics.gcChecked()
	if gone, err = unheld(ctx, livePods{g.APIReader}, g.APIReader, &claim); err != nil || !gone {
		g.clear(claim.UID)
		return reconcile.Result{}, err
	}
	uid := claim.UID
	err = g.Client.Delete(ctx, &claim, deletePreconditions(&claim, claim.Spec.StatefulSet))
	g.clear(uid)
	switch {
	case err == nil:
		g.Metrics.gcDeleted()
		logf.FromContext(ctx).V(1).Info("deleted the MAC claim of a pod that is gone", "claim", claim.Name, "pod", claim.Spec.Pod)
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
	default:
		g.Metrics.gcError()
		return reconcile.Result{}, fmt.Errorf("delete MACClaim %q of pod %s/%s: %w", claim.Name, claim.Spec.Pod.Namespace, claim.Spec.Pod.Name, err)
	}
	return reconcile.Result{}, nil
}

// unheld reads through pods and sets whether a MACClaim's pod is gone and no
// StatefulSet holds the claim for the next pod of its name.
func unheld(ctx context.Context, pods podReader, sets client.Reader, c *v1alpha1.MACClaim) (bool, error) {
	gone, err := podGone(ctx, pods, c.Spec.Pod)
	if err != nil || !gone {
		return false, err
	}
	kept, err := keptFor(ctx, sets, c.Spec.StatefulSet, c.Spec.Pod)
	return !kept, err
}

// podGone reads the pod a claim names through r: gone when absent or of
// another UID.
func podGone(ctx context.Context, r podReader, ref v1alpha1.PodReference) (bool, error) {
	pod, err := r.Pod(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return false, err
	}
	return pod == nil || string(pod.UID) != ref.UID, nil
}

// setupMACGC registers the MACClaim collector: each new claim is looked
// at once, and a deleted pod's claims through the index.
func setupMACGC(ctx context.Context, mgr manager.Manager, pods *infocache.PodCache, o Options) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.MACClaim{}, MACPodUIDIndex, func(o client.Object) []string {
		return []string{o.(*v1alpha1.MACClaim).Spec.Pod.UID}
	}); err != nil {
		return fmt.Errorf("index MACClaims by pod UID: %w", err)
	}
	c := mgr.GetClient()
	ofPod := claimsOfPodIn(c, func() client.ObjectList { return &v1alpha1.MACClaimList{} }, MACPodUIDIndex)
	b := builder.ControllerManagedBy(mgr).
		Named("macclaim-gc").
		For(&v1alpha1.MACClaim{}, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(event.UpdateEvent) bool { return false },
			DeleteFunc: func(event.DeleteEvent) bool { return false },
		})).
		WatchesRawSource(pods.Deletions(ofPod))
	err := withStatefulSets(b, claimsOfStatefulSet(c, func() client.ObjectList { return &v1alpha1.MACClaimList{} })).
		Complete(&MACGC{Client: c, Pods: pods, APIReader: mgr.GetAPIReader(), Grace: o.Grace, Metrics: o.Metrics})
	if err != nil {
		return fmt.Errorf("macclaim-gc controller: %w", err)
	}
	return nil
}

// claimsOfPodIn maps a deleted pod to its claims of one kind (the list
// newList makes), through the pod UID index of that kind.
func claimsOfPodIn(c client.Reader, newList func() client.ObjectList, index string) func(context.Context, *infocache.PodInfo) []reconcile.Request {
	return func(ctx context.Context, pod *infocache.PodInfo) []reconcile.Request {
		list := newList()
		if err := c.List(ctx, list, client.MatchingFields{index: string(pod.UID)}); err != nil {
			logf.FromContext(ctx).Error(err, "list the claims of a deleted pod", "pod", pod.Namespace+"/"+pod.Name)
			return nil
		}
		return requestsOf(ctx, list)
	}
}
