package webhook

import (
	"slices"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"podnet.io/podnet/api/v1alpha1"
)

// podChange is what admission makes true of a pod. The handler derives it
// from the decision; planPatches turns it into the smallest JSON patch, so
// that a pod that already looks like this gets no patch at all.
type podChange struct {
	// Approval and Signature are the annotations to set. Both empty means
	// the pod must carry no approval.
	Approval, Signature string
	// ReadinessGate adds the podnet.io/networks-ready gate. Only on CREATE:
	// the API server forbids changing readinessGates afterwards.
	ReadinessGate bool
	// DropNetRaw drops NET_RAW from every container and init container
	// (planDropNetRaw). Only on CREATE: containers cannot change later.
	DropNetRaw bool
	// Wait, when not nil, is the init container that must run first. Only
	// on CREATE, for the same reason.
	Wait *corev1.Container
	// RequirePlugin sets NRI's required-plugins annotation to podnet's
	// plugin (HoldNRI). Only on CREATE: the runtime reads the annotations
	// when it creates the sandbox.
	RequirePlugin bool
	// RemoveStatus removes the network-status annotations, podnet's and
	// Multus', which only the agent (or Multus) writes, after the pod
	// exists: on CREATE they are forged or copied from another pod.
	RemoveStatus bool
	// Affinity, when not nil, is the pod's affinity with what its
	// networks need of a node required (placement). Only on CREATE:
	// the API server forbids changing it afterwards.
	Affinity *corev1.Affinity
}

// planPatches returns the JSON patch that turns pod into one that satisfies
// ch. It is pure: pod is only read.
func planPatches(pod *corev1.Pod, ch podChange) []jsonpatch.JsonPatchOperation {
	var ops []jsonpatch.JsonPatchOperation
	annotations := pod.Annotations
	if annotations == nil && (ch.Approval != "" || ch.RequirePlugin) {
		// A JSON pointer cannot add a key below a member that does not
		// exist: a pod whose networks all come through claims may have
		// no annotations at all.
		ops = append(ops, jsonpatch.JsonPatchOperation{Operation: "add", Path: "/metadata/annotations", Value: map[string]string{}})
		annotations = map[string]string{}
	}
	ops = append(ops, planApproval(annotations, ch.Approval, ch.Signature)...)
	if ch.RemoveStatus {
		ops = append(ops, planRemoveStatus(annotations)...)
	}
	if ch.RequirePlugin {
		ops = append(ops, planRequirePlugin(annotations)...)
	}
	if ch.ReadinessGate {
		ops = append(ops, planReadinessGate(pod.Spec.ReadinessGates)...)
	}
	if ch.Affinity != nil {
		ops = append(ops, planAffinity(pod, ch.Affinity)...)
	}
	if ch.DropNetRaw {
		// Before the wait container moves the init containers' indices.
		skip := ""
		if ch.Wait != nil {
			skip = ch.Wait.Name
		}
		ops = append(ops, planDropNetRaw(&pod.Spec, skip)...)
	}
	if ch.Wait != nil {
		ops = append(ops, planWaitContainer(pod.Spec.InitContainers, *ch.Wait)...)
	}
	return ops
}

// planApproval sets or removes the two approval annotations. They travel
// together: the signature covers the approval's exact bytes (a dry run's
// approval has none).
func planApproval(annotations map[string]string, approval, signature string) []jsonpatch.JsonPatchOperation {
	want := []struct{ key, value string }{
		{v1alpha1.ApprovedAnnotation, approval},
		{v1alpha1.ApprovedSignatureAnnotation, signature},
	}
	if annotations == nil {
		if approval == "" {
			return nil
		}
		// A JSON pointer cannot add a key below a member that does not
		// exist, so the whole map is added at once.
		value := map[string]string{}
		for _, w := range want {
			if w.value != "" {
				value[w.key] = w.value
			}
		}
		return []jsonpatch.JsonPatchOperation{{Operation: "add", Path: "/metadata/annotations", Value: value}}
	}
	var ops []jsonpatch.JsonPatchOperation
	for _, w := range want {
		path := "/metadata/annotations/" + escapePointer(w.key)
		cur, has := annotations[w.key]
		switch {
		case w.value == "" && has:
			ops = append(ops, jsonpatch.JsonPatchOperation{Operation: "remove", Path: path})
		case w.value != "" && !has:
			ops = append(ops, jsonpatch.JsonPatchOperation{Operation: "add", Path: path, Value: w.value})
		case w.value != "" && cur != w.value:
			ops = append(ops, jsonpatch.JsonPatchOperation{Operation: "replace", Path: path, Value: w.value})
		}
	}
	return ops
}

// planReadinessGate appends the networks-ready gate unless it is there.
func planReadinessGate(gates []corev1.PodReadinessGate) []jsonpatch.JsonPatchOperation {
	gate := corev1.PodReadinessGate{ConditionType: v1alpha1.NetworksReadyCondition}
	if slices.Contains(gates, gate) {
		return nil
	}
	if len(gates) == 0 {
		return []jsonpatch.JsonPatchOperation{{Operation: "add", Path: "/spec/readinessGates", Value: []corev1.PodReadinessGate{gate}}}
	}
	return []jsonpatch.JsonPatchOperation{{Operation: "add", Path: "/spec/readinessGates/-", Value: gate}}
}

// planWaitContainer puts want first among the init containers, so the
// tenant's own init containers already see their networks. A container of
// the same name that differs is replaced where it stands: the name is
// podnet's, and a tenant must not pass off another command under it.
func planWaitContainer(inits []corev1.Container, want corev1.Container) []jsonpatch.JsonPatchOperation {
	i := slices.IndexFunc(inits, func(c corev1.Container) bool { return c.Name == want.Name })
	switch {
	case i >= 0 && apiequality.Semantic.DeepEqual(inits[i], want):
		return nil
	case i >= 0:
		return []jsonpatch.JsonPatchOperation{{Operation: "replace", Path: "/spec/initContainers/" + strconv.Itoa(i), Value: want}}
	case len(inits) == 0:
		return []jsonpatch.JsonPatchOperation{{Operation: "add", Path: "/spec/initContainers", Value: []corev1.Container{want}}}
	default:
		return []jsonpatch.JsonPatchOperation{{Operation: "add", Path: "/spec/initContainers/0", Value: want}}
	}
}

// pointerEscaper escapes JSON pointer tokens (RFC 6901). Built once: a
// Replacer is safe for concurrent use, and building one per admission
// allocated on every pod.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// escapePointer escapes one JSON pointer token: annotation keys contain "/".
func escapePointer(token string) string {
	return pointerEscaper.Replace(token)
}
