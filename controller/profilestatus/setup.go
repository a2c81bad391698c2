package profilestatus

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/controller/infocache"
	"podnet.io/podnet/pkg/policy"
)

// Setup registers the NetworkProfile status reconciler. A profile's
// status depends on every other profile (conflicts) and on the claims of
// its networks, so a spec change requeues every profile at once and a
// claim's creation or deletion requeues the profiles with a network of its
// address space batch later (the claims of that time share the reconcile). Status writes
// change no generation and so trigger nothing.
func Setup(mgr manager.Manager, claims *infocache.ClaimCache, m *Metrics, batch time.Duration) error {
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
