package agent

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
)

// privilegeRefusal is why a pod whose spec breaks what its verified
// approval a assumes gets nothing (and loses whatever was built for it):
// the approval's networks would be in the hands of a pod that can rewrite
// them. The message names each container and capability (or volume and
// path); refused is false for a pod that fits its approval.
func privilegeRefusal(pod *corev1.Pod, a *v1alpha1.Approval) (msg string, refused bool) {
	errs := policy.ValidatePodPrivilege(&pod.Spec, a)
	if len(errs) == 0 {
		return "", false
	}
	return fmt.Sprintf("refused, nothing attached: the pod's spec breaks what its approval assumes: %v", errs.ToAggregate()), true
}
