package agent

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/nsmeta"
	"podnet.io/podnet/pkg/policy"
)

// The agent re-checks, before it attaches and on every change of a
// namespace's labels or of a profile, that the admin still grants what a
// pod's approval lists; the webhook judged the request in full when it
// signed. It reads both from its informer cache, namespaces as metadata
// only, and never writes them.
//
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=podnet.io,resources=networkprofiles,verbs=get;list;watch

// Grants tells which interfaces of a verified approval are no longer
// granted.
type Grants interface {
	Revoked(ctx context.Context, pod *corev1.Pod, a *v1alpha1.Approval) ([]policy.Revocation, error)
}

// CachedGrants answers from the manager's cache: namespace labels and
// NetworkProfiles, judged by policy.Revoked.
type CachedGrants struct{ Reader client.Reader }

// Revoked implements Grants.
func (g CachedGrants) Revoked(ctx context.Context, pod *corev1.Pod, a *v1alpha1.Approval) ([]policy.Revocation, error) {
	var ns *corev1.Namespace
	meta := nsmeta.Object()
	err := g.Reader.Get(ctx, client.ObjectKey{Name: pod.Namespace}, meta)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("pod %s/%s: get namespace: %w", pod.Namespace, pod.Name, err)
	default:
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: meta.Name, Labels: meta.Labels}}
	}
	var profiles v1alpha1.NetworkProfileList
	// policy.Revoked only reads the profiles (TestRevokedNarrowings): the
	// cache's own objects spare a copy of every profile per judgement.
	if err := g.Reader.List(ctx, &profiles, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("pod %s/%s: list networkprofiles: %w", pod.Namespace, pod.Name, err)
	}
	return policy.Revoked(policy.GrantInput{
		Namespace: ns, Profiles: profiles.Items, Approval: a,
		Addresses: heldAddresses(pod),
	}), nil
}

// heldAddresses reads the addresses of the agent's last network-status,
// by interface name. Only the agent writes that annotation: the webhook
// and an admission policy refuse anyone else's change.
func heldAddresses(pod *corev1.Pod) map[string][]netip.Addr {
	out := map[string][]netip.Addr{}
	for _, s := range podstate.DecodeStatus(pod.Annotations[v1alpha1.NetworkStatusAnnotation]) {
		for _, ip := range s.IPs {
			if a, err := netip.ParseAddr(ip); err == nil {
				out[s.Interface] = append(out[s.Interface], a)
			}
		}
	}
	return out
}

// revokedResult turns the condition after an attach into the one a
// judgement owes the pod: it names each interface the admin narrowed and
// why. A detached interface makes the networks not ready (the pod no
// longer has what it asked for); interfaces only narrowed in place leave
// them ready, under their own reason.
func revokedResult(res podstate.Result, revoked []policy.Revocation) podstate.Result {
	if len(revoked) == 0 {
		return res
	}
	var detached, narrowed []string
	for _, r := range revoked {
		part := fmt.Sprintf("%s (network %q): %s", r.Interface, r.Network, r.Reason)
		if r.Detached() {
			detached = append(detached, part)
		} else {
			narrowed = append(narrowed, part)
		}
	}
	var parts []string
	if len(detached) > 0 {
		parts = append(parts, "grant revoked, detached: "+strings.Join(detached, "; "))
	}
	if len(narrowed) > 0 {
		parts = append(parts, "grant narrowed in place: "+strings.Join(narrowed, "; "))
	}
	msg := strings.Join(parts, "; ")
	if res.Ready && res.Message != "no networks approved" {
		msg += "; still " + res.Message
	} else if !res.Ready {
		msg += "; " + res.Message
	}
	switch {
	case len(detached) > 0:
		return podstate.Result{Reason: v1alpha1.ReasonGrantRevoked, Message: msg}
	case !res.Ready:
		return podstate.Result{Reason: res.Reason, Message: msg}
	}
	return podstate.Result{Ready: true, Reason: v1alpha1.ReasonGrantNarrowed, Message: msg}
}

// revocationEvent is the reason and action of the Event announcing a
// judgement: a detach when any interface went, else a change in place.
func revocationEvent(revoked []policy.Revocation) (reason, action string) {
	for _, r := range revoked {
		if r.Detached() {
			return v1alpha1.ReasonGrantRevoked, "Detach"
		}
	}
	return v1alpha1.ReasonGrantNarrowed, "Narrow"
}

// watchGrants requeues the node's pods that a change of namespace labels
// or of a profile may revoke, so a revocation reaches running pods in
// seconds rather than at the next resync.
func (r *Reconciler) watchGrants(b *builder.Builder) *builder.Builder {
	return b.
		WatchesMetadata(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.podsInNamespace),
			builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&v1alpha1.NetworkProfile{}, handler.EnqueueRequestsFromMapFunc(r.podsOfProfile),
			builder.WithPredicates(predicate.GenerationChangedPredicate{}))
}

// podsInNamespace lists this node's approved pods in a namespace (the
// cache holds only this node's pods).
func (r *Reconciler) podsInNamespace(ctx context.Context, ns client.Object) []reconcile.Request {
	return r.approvedPods(ctx, func(p *corev1.Pod) bool { return p.Namespace == ns.GetName() }, client.InNamespace(ns.GetName()))
}

// podsOfProfile lists this node's pods whose approval, or a prepared
// claim's, names a profile.
func (r *Reconciler) podsOfProfile(ctx context.Context, p client.Object) []reconcile.Request {
	needle := fmt.Sprintf(`"profile":%q`, p.GetName())
	return r.approvedPods(ctx, func(pod *corev1.Pod) bool {
		return strings.Contains(pod.Annotations[v1alpha1.ApprovedAnnotation], needle) || (r.Claims != nil && r.Claims.Grants(pod.UID, p.GetName()))
	})
}

func (r *Reconciler) approvedPods(ctx context.Context, match func(*corev1.Pod) bool, opts ...client.ListOption) []reconcile.Request {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, opts...); err != nil {
		logf.FromContext(ctx).Error(err, "list pods to re-check their grants")
		return nil
	}
	var out []reconcile.Request
	for i := range pods.Items {
		p := &pods.Items[i]
		// A pod whose networks all come through claims carries no
		// approval of its own: its claims' grants are re-checked too.
		if _, ok := p.Annotations[v1alpha1.ApprovedAnnotation]; (ok || r.claimed(p.UID)) && match(p) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(p)})
		}
	}
	return out
}
