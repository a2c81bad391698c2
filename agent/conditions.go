package agent

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// Reasons of the podnet.io/networks-ready condition and of Events.
const (
	// ReasonAttached: every approved interface is in place.
	ReasonAttached = "NetworksAttached"
	// ReasonNoNetworks: the pod asks for no networks (any more).
	ReasonNoNetworks = "NoNetworks"
	// ReasonInvalidApproval: the approval is missing, does not verify, or
	// was issued for another namespace, service account or request.
	ReasonInvalidApproval = "InvalidApproval"
	// ReasonIPAMFailed: an address could not be reserved.
	ReasonIPAMFailed = "IPAMFailed"
	// ReasonQuotaExceeded: the pod's namespace already holds as many
	// addresses of the network's address space as its quota (the strictest
	// ipam.maxAddressesPerNamespace of the profiles on it) allows; the agent tries again with backoff and attaches the pod once
	// one is freed.
	ReasonQuotaExceeded = "QuotaExceeded"
	// ReasonAttachFailed: the dataplane could not build an interface.
	ReasonAttachFailed = "AttachFailed"
	// ReasonGrantRevoked: the admin took back (part of) what the approval
	// grants: the namespace's opt-in or selecting labels, the profile, a
	// network of it, or the pool an address came from. The agent detached
	// those interfaces; the pod keeps running.
	ReasonGrantRevoked = "GrantRevoked"
	// ReasonGrantNarrowed: the admin narrowed a network under the pod
	// (a lower MTU maximum, fewer routes, no default route) and the agent
	// changed its interfaces in place; the networks stay ready. An
	// interface that cannot change in place is detached (GrantRevoked).
	ReasonGrantNarrowed = "GrantNarrowed"
	// ReasonDetached is the Event of removed interfaces.
	ReasonDetached = "NetworksDetached"
)

// result is what one reconcile concluded about a pod.
type result struct {
	Ready   bool
	Reason  string
	Message string
}

// conditionPatch returns the condition to write, or nil when the pod already
// carries an equal one. The transition time moves only when the status
// flips, as the API conventions ask.
func conditionPatch(pod *corev1.Pod, r result, now metav1.Time) *corev1.PodCondition {
	want := corev1.ConditionFalse
	if r.Ready {
		want = corev1.ConditionTrue
	}
	c := corev1.PodCondition{
		Type:               v1alpha1.NetworksReadyCondition,
		Status:             want,
		Reason:             r.Reason,
		Message:            r.Message,
		LastTransitionTime: now,
	}
	if cur := findCondition(pod); cur != nil && cur.Status == want {
		if cur.Reason == r.Reason && cur.Message == r.Message {
			return nil
		}
		c.LastTransitionTime = cur.LastTransitionTime
	}
	return &c
}

// findCondition returns the pod's networks-ready condition, if the agent
// ever wrote one.
func findCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == v1alpha1.NetworksReadyCondition {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
