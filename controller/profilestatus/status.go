package profilestatus

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
	"podnet.io/podnet/controller/infocache"
	"podnet.io/podnet/pkg/policy"
)

// +kubebuilder:rbac:groups=podnet.io,resources=networkprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=podnet.io,resources=networkprofiles/status,verbs=get;patch;update

// StatusReconciler owns NetworkProfile status. It reads only its caches
// (profiles, and the claim cache) and writes a status only when
// planStatus differs from the one the profile has.
type StatusReconciler struct {
	// Client reads from the manager's cache and patches status.
	Client client.Client
	// Claims is the claim cache.
	Claims  *infocache.ClaimCache
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
	if !r.Claims.WaitForSync(ctx) {
		return reconcile.Result{}, fmt.Errorf("NetworkProfile %q: claim cache not synced: %w", p.Name, ctx.Err())
	}
	addrs := r.addressesOf(&p)
	inUse := func(network string, pool netip.Prefix) int64 {
		n := int64(0)
		for _, a := range addrs[network] {
			if pool.Contains(a) {
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

// addressesOf reads from the claim cache, in one walk, the addresses the
// claims of p's networks hold.
func (r *StatusReconciler) addressesOf(p *v1alpha1.NetworkProfile) map[string][]netip.Addr {
	out := make(map[string][]netip.Addr, len(p.Spec.Networks))
	spaces := make([]string, len(p.Spec.Networks))
	for i := range p.Spec.Networks {
		out[p.Spec.Networks[i].Name] = nil
		spaces[i] = policy.NetworkSpace(&p.Spec.Networks[i])
	}
	r.Claims.Each(func(c *infocache.ClaimInfo) bool {
		a, err := netip.ParseAddr(c.Spec.Address)
		if err != nil {
			return true
		}
		for i, n := range p.Spec.Networks {
			if policy.ClaimInSpace(c.Spec.Network, c.Spec.AddressSpace, n.Name, spaces[i]) {
				out[n.Name] = append(out[n.Name], a)
			}
		}
		return true
	})
	return out
}
