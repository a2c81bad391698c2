package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/api/v1alpha1"
)

// +kubebuilder:rbac:groups=podnet.io,resources=ipclaims,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// GC deletes the IPClaims of pods that are gone. A claim is a candidate
// when the cache holds no pod of its namespace, name and UID; it is
// deleted once it has been a candidate for Grace (a pod just created may
// not be in the cache yet; an agent detaching a deleted pod releases its
// claims itself within that time) and a live read of the pod confirms it
// is gone. The delete carries the claim's UID, so a claim re-created on
// the same name is never touched.
type GC struct {
	// Client reads claims and pod metadata from the cache and deletes.
	Client client.Client
	// APIReader reads the API server itself, for the last check.
	APIReader client.Reader
	Grace     time.Duration
	Metrics   *Metrics
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu sync.Mutex
	// since holds when each candidate claim (by UID) was first seen
	// without its pod.
	since map[types.UID]time.Time
}

// Reconcile implements reconcile.Reconciler for one claim.
func (g *GC) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var claim v1alpha1.IPClaim
	if err := g.Client.Get(ctx, req.NamespacedName, &claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	return g.collect(ctx, &claim)
}

// collect deletes claim when its pod has been gone for Grace, or says when
// to look again.
func (g *GC) collect(ctx context.Context, claim *v1alpha1.IPClaim) (reconcile.Result, error) {
	live, err := podLive(ctx, g.Client, claim.Spec.Pod)
	if err != nil || live {
		g.clear(claim.UID)
		return reconcile.Result{}, err
	}
	if wait := g.Grace - g.now().Sub(g.candidate(claim.UID)); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	g.Metrics.gcChecked()
	if live, err = podLive(ctx, g.APIReader, claim.Spec.Pod); err != nil || live {
		if err != nil {
			g.Metrics.gcError()
		}
		g.clear(claim.UID)
		return reconcile.Result{}, err
	}
	uid := claim.UID
	err = g.Client.Delete(ctx, claim, client.Preconditions{UID: &uid})
	g.clear(uid)
	switch {
	case err == nil:
		g.Metrics.gcDeleted()
		logf.FromContext(ctx).V(1).Info("deleted the claim of a pod that is gone", "claim", claim.Name, "pod", claim.Spec.Pod)
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
	default:
		g.Metrics.gcError()
		return reconcile.Result{}, fmt.Errorf("delete IPClaim %q of pod %s/%s: %w", claim.Name, claim.Spec.Pod.Namespace, claim.Spec.Pod.Name, err)
	}
	return reconcile.Result{}, nil
}

// Candidates is the periodic pass: it returns an event for every claim of
// the cache whose pod the cache does not hold, to feed the GC controller.
// It reads only the cache.
func (g *GC) Candidates(ctx context.Context) ([]event.GenericEvent, error) {
	var list v1alpha1.IPClaimList
	if err := g.Client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list IPClaims: %w", err)
	}
	var out []event.GenericEvent
	for i := range list.Items {
		live, err := podLive(ctx, g.Client, list.Items[i].Spec.Pod)
		if err != nil {
			return out, err
		}
		if !live {
			out = append(out, event.GenericEvent{Object: &list.Items[i]})
		}
	}
	return out, nil
}

// podLive reports whether r holds the pod ref names, with its UID.
func podLive(ctx context.Context, r client.Reader, ref v1alpha1.PodReference) (bool, error) {
	var m metav1.PartialObjectMetadata
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	err := r.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &m)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get pod %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	return string(m.UID) == ref.UID, nil
}

func (g *GC) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// candidate returns when the claim was first seen without its pod.
func (g *GC) candidate(uid types.UID) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.since == nil {
		g.since = map[types.UID]time.Time{}
	}
	t, ok := g.since[uid]
	if !ok {
		t = g.now()
		g.since[uid] = t
	}
	return t
}

func (g *GC) clear(uid types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.since, uid)
}
