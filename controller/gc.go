package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/api/v1alpha1"
)

// +kubebuilder:rbac:groups=podnet.io,resources=ipclaims,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// GC deletes the IPClaims of pods that are gone, and the forged claims
// of live pods (see forgery). A claim is a candidate when the cache holds
// no pod of its namespace, name and UID, or holds one that the claim
// cannot belong to; it is deleted once it has been a candidate for Grace
// (a pod just created may not be in the cache yet; an agent detaching a
// deleted pod releases its claims itself within that time; a network just
// removed from a pod's request is released by its agent) and a live read
// of the pod confirms it. The delete carries the claim's UID, so a claim
// re-created on the same name is never touched.
type GC struct {
	// Client reads claims from the cache and deletes.
	Client client.Client
	// Pods is the pod cache.
	Pods *PodCache
	// APIReader reads the API server itself, for the last check.
	APIReader client.Reader
	// Events records an Event on every forged claim deleted (nil: none).
	Events  events.EventRecorder
	Grace   time.Duration
	Metrics *Metrics

	graceTracker
}

// Reconcile implements reconcile.Reconciler for one claim.
func (g *GC) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var claim v1alpha1.IPClaim
	if err := g.Client.Get(ctx, req.NamespacedName, &claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	return g.collect(ctx, &claim)
}

// collect deletes claim when its pod has been gone, or the claim forged,
// for Grace, or says when to look again.
func (g *GC) collect(ctx context.Context, claim *v1alpha1.IPClaim) (reconcile.Result, error) {
	v, err := judge(ctx, g.Pods, g.Client, claim)
	if err != nil || v.held() {
		g.clear(claim.UID)
		return reconcile.Result{}, err
	}
	grace := g.Grace
	if v.gone {
		grace = graceOf(g.Grace, claim.Spec.StatefulSet)
	}
	if wait := grace - g.now().Sub(g.candidate(claim.UID)); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	g.Metrics.gcChecked()
	if v, err = judge(ctx, livePods{g.APIReader}, g.APIReader, claim); err != nil || v.held() {
		if err != nil {
			g.Metrics.gcError()
		}
		g.clear(claim.UID)
		return reconcile.Result{}, err
	}
	uid := claim.UID
	err = g.Client.Delete(ctx, claim, deletePreconditions(claim, claim.Spec.StatefulSet))
	g.clear(uid)
	switch {
	case err == nil:
		g.deleted(ctx, claim, v)
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
	default:
		g.Metrics.gcError()
		return reconcile.Result{}, fmt.Errorf("delete IPClaim %q of pod %s/%s: %w", claim.Name, claim.Spec.Pod.Namespace, claim.Spec.Pod.Name, err)
	}
	return reconcile.Result{}, nil
}

// deleted reports a collected claim: a log line, a metric, and for a
// forged claim a Warning Event on it naming why.
func (g *GC) deleted(ctx context.Context, claim *v1alpha1.IPClaim, v verdict) {
	log := logf.FromContext(ctx)
	if v.forged == "" {
		g.Metrics.gcDeleted()
		log.V(1).Info("deleted the claim of a pod that is gone", "claim", claim.Name, "pod", claim.Spec.Pod)
		return
	}
	g.Metrics.gcForged()
	log.Info("deleted a forged claim", "claim", claim.Name, "pod", claim.Spec.Pod, "node", claim.Labels[v1alpha1.NodeLabel], "why", v.forged)
	if g.Events != nil {
		g.Events.Eventf(claim, nil, corev1.EventTypeWarning, ReasonForgedClaim, "Delete",
			"deleted IPClaim %s naming pod %s/%s, which lives, because %s", claim.Name, claim.Spec.Pod.Namespace, claim.Spec.Pod.Name, v.forged)
	}
}

// verdict is what a read of a claim's pod says about the claim.
type verdict struct {
	gone   bool   // no pod of the claim's namespace, name and UID
	kept   bool   // gone, but its StatefulSet holds it (see holds.go)
	forged string // the pod lives but cannot hold the claim: why
}

func (v verdict) held() bool { return (!v.gone && v.forged == "") || v.kept }

// judge reads the pod claim names through pods and says whether it holds
// the claim, or, when it is gone, whether the StatefulSet the claim is
// held for (read through sets) does.
func judge(ctx context.Context, pods podReader, sets client.Reader, claim *v1alpha1.IPClaim) (verdict, error) {
	ref := claim.Spec.Pod
	pod, err := pods.pod(ctx, ref.Namespace, ref.Name)
	switch {
	case err != nil:
		return verdict{}, err
	case pod == nil || string(pod.UID) != ref.UID:
		kept, err := keptFor(ctx, sets, claim.Spec.StatefulSet, ref)
		return verdict{gone: true, kept: kept}, err
	}
	return verdict{forged: forgery(claim, pod)}, nil
}

// podReader reads a pod by namespace and name, reduced to a PodInfo: from
// the pod cache (PodCache) or from the API server (livePods); nil when
// there is none.
type podReader interface {
	pod(ctx context.Context, namespace, name string) (*PodInfo, error)
}

// livePods reads pods from the API server, for the last check before a
// delete.
type livePods struct{ client.Reader }

func (l livePods) pod(ctx context.Context, namespace, name string) (*PodInfo, error) {
	var pod corev1.Pod
	err := l.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &pod)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get pod %s/%s: %w", namespace, name, err)
	}
	return newPodInfo(&pod), nil
}

// Candidates is the periodic pass: it returns an event for every claim of
// the cache whose pod the cache does not hold or cannot hold it, to feed
// the GC controller. It reads only the caches.
func (g *GC) Candidates(ctx context.Context) ([]event.GenericEvent, error) {
	// No copy of the whole cache: only the candidates are handed on,
	// and the collector reads each again before acting.
	var list v1alpha1.IPClaimList
	if err := g.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list IPClaims: %w", err)
	}
	var out []event.GenericEvent
	for i := range list.Items {
		v, err := judge(ctx, g.Pods, g.Client, &list.Items[i])
		if err != nil {
			return out, err
		}
		if !v.held() {
			out = append(out, event.GenericEvent{Object: list.Items[i].DeepCopy()})
		}
	}
	return out, nil
}
