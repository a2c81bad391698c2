package controller

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
)

// +kubebuilder:rbac:groups=podnet.io,resources=networkprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=podnet.io,resources=networkprofiles/status,verbs=get;patch;update

// StatusReconciler owns NetworkProfile status. It reads only its cache
// (profiles, and claims through the network index) and writes a status
// only when planStatus differs from the one the profile has.
type StatusReconciler struct {
	// Client reads from the manager's cache and patches status.
	Client  client.Client
	Metrics *Metrics
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Reconcile implements reconcile.Reconciler.
func (r *StatusReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var p v1alpha1.NetworkProfile
	if err := r.Client.Get(ctx, req.NamespacedName, &p); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var all v1alpha1.NetworkProfileList
	if err := r.Client.List(ctx, &all); err != nil {
		return reconcile.Result{}, fmt.Errorf("list NetworkProfiles: %w", err)
	}
	counts := map[string][]v1alpha1.IPClaim{}
	var listErr error
	inUse := func(network string, pool netip.Prefix) int64 {
		claims, ok := counts[network]
		if !ok {
			var list v1alpha1.IPClaimList
			// Read only: no copy of every claim of the network.
			if err := r.Client.List(ctx, &list, client.MatchingFields{NetworkIndex: network}, client.UnsafeDisableDeepCopy); err != nil {
				listErr = err
			}
			claims = list.Items
			counts[network] = claims
		}
		n := int64(0)
		for _, c := range claims {
			if a, err := netip.ParseAddr(c.Spec.Address); err == nil && pool.Contains(a) {
				n++
			}
		}
		return n
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	st := planStatus(&p, policy.ValidateNetworkProfile(&p), policy.ProfileConflicts(all.Items)[p.Name], inUse, metav1.NewTime(now()))
	if listErr != nil {
		return reconcile.Result{}, fmt.Errorf("NetworkProfile %q: list IPClaims: %w", p.Name, listErr)
	}
	for _, n := range st.Networks {
		for _, u := range n.Pools {
			r.Metrics.setPool(n.Name, u.Pool, u.InUse, u.Available)
		}
	}
	if apiequality.Semantic.DeepEqual(st, p.Status) {
		return reconcile.Result{}, nil
	}
	orig := p.DeepCopy()
	p.Status = st
	if err := r.Client.Status().Patch(ctx, &p, client.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("NetworkProfile %q: patch status: %w", p.Name, err)
	}
	return reconcile.Result{}, nil
}
