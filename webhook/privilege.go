package webhook

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
)

// admittedPrivilege checks the pod as this admission leaves it against
// what its approval assumes (policy.ValidatePodPrivilege, the agent's
// check too): the webhook must accept what it produced, and must not sign
// for a pod the agent will refuse. On CREATE the spec is the one after
// change's own patch (NET_RAW dropped, the wait container added); an
// UPDATE cannot change it.
func admittedPrivilege(pod *corev1.Pod, change podChange, appr *v1alpha1.Approval) field.ErrorList {
	return policy.ValidatePodPrivilege(specAfter(pod, change), appr)
}

// specAfter is the pod's spec as change's NET_RAW drops leave it, from the
// same netRawDrop that writes their patch (TestSpecAfterIsThePatchedSpec
// holds it to the API server's JSON patch). The pod is not changed: the
// spec is a copy where it differs. The wait container is left out: it
// drops ALL by construction (TestCreateAcceptsWhatItProduced checks the
// whole pod), and without it the tenant's init containers keep the
// indices the tenant wrote, which the denials name.
func specAfter(pod *corev1.Pod, change podChange) *corev1.PodSpec {
	if !change.DropNetRaw {
		return &pod.Spec
	}
	spec := pod.Spec
	spec.Containers = withNetRawDropped(pod.Spec.Containers, "")
	spec.InitContainers = withNetRawDropped(pod.Spec.InitContainers, "")
	return &spec
}

// privilegeDenial is the message of a pod refused for what its spec
// holds. On UPDATE it says how to get there, since a running pod's
// containers and volumes cannot change.
func privilegeDenial(pod *corev1.Pod, errs field.ErrorList, create bool) string {
	msg := refusal(pod, "networks refused for what the pod's spec holds: ", errs)
	if !create {
		msg += fmt.Sprintf(". A running pod's containers and volumes cannot change: create the pod with %s set (podnet then drops NET_RAW itself) or with the spec changed as said", v1alpha1.NetworksAnnotation)
	}
	return msg
}
