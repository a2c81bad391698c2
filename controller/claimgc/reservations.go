package claimgc

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam"
)

// Claims reserved for a StatefulSet (spec.statefulSet, a network's
// ipam.persistent) outlive their pod: while the StatefulSet of the reservation's
// name and UID exists and its replicas reach the pod's ordinal
// (ipam.StatefulSetKeeps), a claim whose pod is gone is kept, for the next
// pod of that name to take over. Once the StatefulSet no longer holds it
// (scaled below the ordinal, deleted, replaced by another of the same
// name, or never there: a faked ownerReference), the claim is collected
// like any claim of a gone pod, after the longer of Grace and the reservation's
// releaseAfter, and a live read of the StatefulSet confirms it first.
// StatefulSets are few, so the controller caches them all; a change of
// one's spec, or its deletion, looks at its claims again through the
// v1alpha1.StatefulSetLabel on them.
//
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch

// keptFor reports whether the StatefulSet a claim is reserved for, read
// through r, still holds it for pod ref.
func keptFor(ctx context.Context, r client.Reader, res *v1alpha1.StatefulSetReservation, ref v1alpha1.PodReference) (bool, error) {
	if res == nil {
		return false, nil
	}
	var sts appsv1.StatefulSet
	err := r.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: res.Name}, &sts)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get StatefulSet %s/%s: %w", ref.Namespace, res.Name, err)
	}
	return ipam.StatefulSetKeeps(res, ref.Name, &sts), nil
}

// graceOf is how long a claim must have been a candidate before it is
// deleted: grace, or the reservation's releaseAfter when longer.
func graceOf(grace time.Duration, res *v1alpha1.StatefulSetReservation) time.Duration {
	return max(grace, ipam.ReleaseAfter(res))
}

// withStatefulSets makes b look again at the claims (those claimsOf
// names) reserved for a StatefulSet whose spec changed or that was deleted.
func withStatefulSets(b *builder.Builder, claimsOf handler.MapFunc) *builder.Builder {
	return b.Watches(&appsv1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(claimsOf),
		builder.WithPredicates(predicate.GenerationChangedPredicate{}))
}

// claimsOfStatefulSet maps a StatefulSet to the claims reserved for it.
func claimsOfStatefulSet(c client.Reader, newList func() client.ObjectList) handler.MapFunc {
	return func(ctx context.Context, sts client.Object) []reconcile.Request {
		list := newList()
		if err := c.List(ctx, list, client.MatchingLabels{v1alpha1.StatefulSetLabel: string(sts.GetUID())}); err != nil {
			logf.FromContext(ctx).Error(err, "list the claims reserved for a StatefulSet", "statefulset", client.ObjectKeyFromObject(sts))
			return nil
		}
		return requestsOf(ctx, list)
	}
}

// requestsOf is a request for every object of list.
func requestsOf(ctx context.Context, list client.ObjectList) []reconcile.Request {
	items, err := meta.ExtractList(list)
	if err != nil {
		logf.FromContext(ctx).Error(err, "read a list of claims")
		return nil
	}
	out := make([]reconcile.Request, 0, len(items))
	for _, o := range items {
		if obj, ok := o.(client.Object); ok {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
	}
	return out
}

// deletePreconditions are what a collector's delete of claim carries: its
// UID, so a claim re-created on the same name is never touched, and for a
// reserved claim its resourceVersion too: a reserved claim changes when the next
// pod of its name takes it over, and the claim judged gone must not be
// deleted under that pod.
func deletePreconditions(claim client.Object, res *v1alpha1.StatefulSetReservation) client.Preconditions {
	uid := claim.GetUID()
	pre := client.Preconditions{UID: &uid}
	if res != nil {
		rv := claim.GetResourceVersion()
		pre.ResourceVersion = &rv
	}
	return pre
}
