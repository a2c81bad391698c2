package claimgc

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

	"podnet.io/podnet/controller/infocache"
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
	// Client reads StatefulSets from the cache and deletes.
	Client client.Client
	// Claims is the claim cache.
	Claims *infocache.ClaimCache
	// Pods is the pod cache.
	Pods *infocache.PodCache
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
	claim, err := g.Claims.Get(ctx, req.Name)
	if err != nil || claim == nil {
		return reconcile.Result{}, err
	}
	return g.collect(ctx, claim)
}

// collect deletes claim when its pod has been gone, or the claim forged,
// for Grace, or says when to look again.
func (g *GC) collect(ctx context.Context, claim *infocache.ClaimInfo) (reconcile.Result, error) {
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
	obj := claim.Object()
	err = g.Client.Delete(ctx, obj, deletePreconditions(obj, claim.Spec.StatefulSet))
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
func (g *GC) deleted(ctx context.Context, claim *infocache.ClaimInfo, v verdict) {
	log := logf.FromContext(ctx)
	if v.forged == "" {
		g.Metrics.gcDeleted()
		log.V(1).Info("deleted the claim of a pod that is gone", "claim", claim.Name, "pod", claim.Spec.Pod)
		return
	}
	g.Metrics.gcForged()
	log.Info("deleted a forged claim", "claim", claim.Name, "pod", claim.Spec.Pod, "node", claim.Node, "why", v.forged)
	if g.Events != nil {
		g.Events.Eventf(claim.Object(), nil, corev1.EventTypeWarning, ReasonForgedClaim, "Delete",
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
func judge(ctx context.Context, pods podReader, sets client.Reader, claim *infocache.ClaimInfo) (verdict, error) {
	ref := claim.Spec.Pod
	pod, err := pods.Pod(ctx, ref.Namespace, ref.Name)
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
	Pod(ctx context.Context, namespace, name string) (*infocache.PodInfo, error)
}

// livePods reads pods from the API server, for the last check before a
// delete.
type livePods struct{ client.Reader }

func (l livePods) Pod(ctx context.Context, namespace, name string) (*infocache.PodInfo, error) {
	var pod corev1.Pod
	err := l.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &pod)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get pod %s/%s: %w", namespace, name, err)
	}
	return infocache.NewPodInfo(&pod), nil
}

// Candidates is the sweep: it returns an event for every claim of the
// cache whose pod the cache does not hold or that cannot hold it, to feed
// the GC controller. It walks the caches only, and hands on only the
// candidates, which the collector reads again before acting: a controller
// that starts sweeps once instead of looking at every claim.
func (g *GC) Candidates(ctx context.Context) ([]event.GenericEvent, error) {
	if !g.Claims.WaitForSync(ctx) {
		return nil, fmt.Errorf("list IPClaims: claim cache not synced: %w", ctx.Err())
	}
	var out []event.GenericEvent
	var err error
	n := 0
	g.Claims.Each(func(c *infocache.ClaimInfo) bool {
		var v verdict
		if v, err = judge(ctx, g.Pods, g.Client, c); err != nil {
			return false
		}
		n++
		if !v.held() {
			out = append(out, event.GenericEvent{Object: c.Object()})
		}
		return true
	})
	g.Metrics.gcSwept(n)
	return out, err
}
