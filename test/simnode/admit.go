package simnode

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
)

// Admit judges pod (not yet created), whose podnet.io/networks annotation
// is set, against profiles with the webhook's own decision (policy.Decide),
// so the approval carries what production signs: the address space and
// the namespace's quota of it. It then signs the approval, issued now, and
// drops NET_RAW as Approve does. ns is the pod's namespace as the API
// server has it (labels included).
func (a *Approver) Admit(pod *corev1.Pod, ns *corev1.Namespace, profiles *policy.ProfileSet) error {
	appr, errs := policy.Decide(policy.Input{Namespace: ns, Pod: pod, Prepared: profiles})
	if len(errs) > 0 {
		return fmt.Errorf("admit pod %s/%s: %w", pod.Namespace, pod.Name, errs.ToAggregate())
	}
	if appr == nil {
		return fmt.Errorf("admit pod %s/%s: it asks for no network", pod.Namespace, pod.Name)
	}
	appr.IssuedAt = metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	payload, sig, err := a.Sign(appr)
	if err != nil {
		return fmt.Errorf("sign approval of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	pod.Annotations[v1alpha1.ApprovedAnnotation] = payload
	pod.Annotations[v1alpha1.ApprovedSignatureAnnotation] = sig
	dropNetRaw(pod.Spec.InitContainers)
	dropNetRaw(pod.Spec.Containers)
	return nil
}
