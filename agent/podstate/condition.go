package podstate

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// Result is what one reconcile concluded about a pod.
type Result struct {
	Ready   bool
	Reason  string
	Message string
}

// ConditionPatch returns the condition to write, or nil when the pod already
// carries an equal one. The transition time moves only when the status
// flips, as the API conventions ask.
func ConditionPatch(pod *corev1.Pod, r Result, now metav1.Time) *corev1.PodCondition {
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
	if cur := FindCondition(pod); cur != nil && cur.Status == want {
		if cur.Reason == r.Reason && cur.Message == r.Message {
			return nil
		}
		c.LastTransitionTime = cur.LastTransitionTime
	}
	return &c
}

// FindCondition returns the pod's networks-ready condition, if the agent
// ever wrote one.
func FindCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == v1alpha1.NetworksReadyCondition {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
