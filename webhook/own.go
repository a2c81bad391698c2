package webhook

import (
	"fmt"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
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

// validateApprovalHasRequest refuses a new pod that carries an approval or
// its signature but asks for no network. Such an approval was judged for
// another pod; the webhook signs only for the request it judges.
func validateApprovalHasRequest(pod *corev1.Pod) field.ErrorList {
	if strings.TrimSpace(pod.Annotations[v1alpha1.NetworksAnnotation]) != "" {
		return nil
	}
	var errs field.ErrorList
	for _, k := range []string{v1alpha1.ApprovedAnnotation, v1alpha1.ApprovedSignatureAnnotation} {
		if v, ok := pod.Annotations[k]; ok {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "annotations").Key(k), shorten(v),
				fmt.Sprintf("set on a pod that asks for no network (%s): only podnet's webhook writes it, for the request it judged; remove it", v1alpha1.NetworksAnnotation)))
		}
	}
	return errs
}

// statusAnnotations are written after a pod exists, by the agent (and by
// Multus, under its key); a new pod carrying one copied or forged it.
var statusAnnotations = []string{v1alpha1.NetworkStatusAnnotation, v1alpha1.MultusNetworkStatusAnnotation}

// planRemoveStatus removes the network-status annotations present.
func planRemoveStatus(annotations map[string]string) []jsonpatch.JsonPatchOperation {
	var ops []jsonpatch.JsonPatchOperation
	for _, k := range statusAnnotations {
		if _, ok := annotations[k]; ok {
			ops = append(ops, jsonpatch.JsonPatchOperation{Operation: "remove", Path: "/metadata/annotations/" + escapePointer(k)})
		}
	}
	return ops
}

// shorten cuts a long value for a message.
func shorten(v string) string {
	const limit = 60
	if len(v) <= limit {
		return v
	}
	return v[:limit] + "…"
}
