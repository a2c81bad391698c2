package webhook

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// ownAnnotations are written only by podnet: the approval and its
// signature by this webhook, the network status by the agent. The agent's
// own requests never reach the webhook (matchConditions), so every UPDATE
// the webhook sees comes from someone who must not change them.
var ownAnnotations = []string{
	v1alpha1.ApprovedAnnotation,
	v1alpha1.ApprovedSignatureAnnotation,
	v1alpha1.NetworkStatusAnnotation,
}

// validateOwnAnnotationsUnchanged refuses an UPDATE that adds, changes or
// removes one of podnet's own annotations. Without it a tenant could put a
// status the agent never wrote on a pod, or carry an approval across an
// edit that the webhook would otherwise re-derive.
func validateOwnAnnotationsUnchanged(old, pod *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	for _, k := range ownAnnotations {
		was, had := old.Annotations[k]
		is, has := pod.Annotations[k]
		if had != has || was != is {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations").Key(k),
				"written only by podnet's webhook and agent; leave it as it is (change "+v1alpha1.NetworksAnnotation+" to change the pod's networks)"))
		}
	}
	return errs
}
