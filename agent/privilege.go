package agent

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
)

// refusePrivileged configures nothing for a pod whose spec breaks what its
// verified approval a assumes, and removes whatever was built for it: the
// approval's networks would be in the hands of a pod that can rewrite
// them. The condition and a Warning Event name each container and
// capability (or volume and path). It reports whether the pod was
// refused.
func (r *Reconciler) refusePrivileged(ctx context.Context, pod *corev1.Pod, a *v1alpha1.Approval) (bool, error) {
	errs := policy.ValidatePodPrivilege(&pod.Spec, a)
	if len(errs) == 0 {
		return false, nil
	}
	msg := fmt.Sprintf("refused, nothing attached: the pod's spec breaks what its approval assumes: %v", errs.ToAggregate())
	r.Metrics.error(v1alpha1.ReasonPrivilegedPod)
	if c := findCondition(pod); c == nil || c.Message != msg {
		r.Events.Eventf(pod, nil, corev1.EventTypeWarning, v1alpha1.ReasonPrivilegedPod, "Verify", "%s", msg)
	}
	r.Attaches.Answer(string(pod.UID), "", fmt.Errorf("%s: %s", v1alpha1.ReasonPrivilegedPod, msg))
	err := r.detach(ctx, pod)
	return true, errors.Join(err, r.writeStatus(ctx, pod, nil, result{Reason: v1alpha1.ReasonPrivilegedPod, Message: msg}))
}
