package webhook

import (
	"encoding/json"
	"fmt"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
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
func admittedPrivilege(pod *corev1.Pod, change podChange, appr *v1alpha1.Approval) (field.ErrorList, error) {
	spec, err := specAfter(pod, change)
	if err != nil {
		return nil, err
	}
	return policy.ValidatePodPrivilege(spec, appr), nil
}

// specAfter applies the patch of change's NET_RAW drops to a copy of the
// pod's spec, through the very JSON patch the API server will apply. The
// wait container is left out: it drops ALL by construction
// (TestCreateAcceptsWhatItProduced checks the whole pod), and without it
// the tenant's init containers keep the indices the tenant wrote, which
// the denials name.
func specAfter(pod *corev1.Pod, change podChange) (*corev1.PodSpec, error) {
	if !change.DropNetRaw {
		return &pod.Spec, nil
	}
	ops := planDropNetRaw(&pod.Spec, "")
	if len(ops) == 0 {
		return &pod.Spec, nil
	}
	doc, err := json.Marshal(corev1.Pod{Spec: pod.Spec})
	if err == nil {
		var patch []byte
		if patch, err = json.Marshal(ops); err == nil {
			var p jsonpatchapply.Patch
			if p, err = jsonpatchapply.DecodePatch(patch); err == nil {
				doc, err = p.Apply(doc)
			}
		}
	}
	var out corev1.Pod
	if err == nil {
		err = json.Unmarshal(doc, &out)
	}
	if err != nil {
		return nil, fmt.Errorf("pod %s: apply podnet's own patch to check it: %w", podName(pod), err)
	}
	return &out.Spec, nil
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
