package agent

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"podnet.io/podnet/agent/dra"
	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
)

// ResourceClaims are the networks pods get through resource claims of
// podnet's DRA driver prepared on this node (*dra.ClaimNetworks): the
// reconcile builds their interfaces with the pod's own.
type ResourceClaims interface {
	// Approve is the approval the pod's attach executes, the pod's own
	// (verified by v) with its prepared claims'.
	Approve(v podstate.Verifier, pod *corev1.Pod) (*v1alpha1.Approval, []*dra.VerifiedClaim, error)
	// Has reports whether a claim prepared on this node is the pod's.
	Has(uid types.UID) bool
	// Grants reports whether a claim of the pod was approved through the
	// profile.
	Grants(uid types.UID, profile string) bool
	// WriteStatus writes the built interfaces into the claims' status.
	WriteStatus(ctx context.Context, w client.StatusClient, claims []*dra.VerifiedClaim, built []dataplane.InterfaceStatus) error
	// Source wakes the pods whose claims were prepared or unprepared.
	Source() source.Source
}

var _ ResourceClaims = (*dra.ClaimNetworks)(nil)

// approve is the approval the pod's attach executes, with the pod's
// prepared claims (dra.ClaimNetworks.Approve); without claims, the pod's
// own.
func (r *Reconciler) approve(pod *corev1.Pod) (*v1alpha1.Approval, []*dra.VerifiedClaim, error) {
	if r.Claims == nil {
		a, err := r.Verifier.Verify(pod)
		return a, nil, err
	}
	return r.Claims.Approve(r.Verifier, pod)
}

// claimed reports whether a claim prepared on this node is the pod's.
func (r *Reconciler) claimed(uid types.UID) bool { return r.Claims != nil && r.Claims.Has(uid) }
