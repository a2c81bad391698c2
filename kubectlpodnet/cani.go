package kubectlpodnet

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// Exit codes of can-i, as `kubectl auth can-i` uses them.
const (
	exitAllowed = 0
	exitDenied  = 1
	exitFailed  = 2
)

// CanIResult is the webhook's decision for a request, as can-i prints it.
type CanIResult struct {
	Namespace      string `json:"namespace"`
	ServiceAccount string `json:"serviceAccount"`
	Request        string `json:"request"`
	Allowed        bool   `json:"allowed"`
	// Interfaces are the resolved interfaces when allowed.
	Interfaces []v1alpha1.ApprovedInterface `json:"interfaces,omitempty"`
	// Message is the denial, or why the pod would get no networks.
	Message string `json:"message,omitempty"`
}

// canIFromPod reads the decision off the pod the dry-run create returned:
// allowed only if the webhook stamped an approval.
func canIFromPod(r CanIResult, pod *corev1.Pod, nsLabels map[string]string) CanIResult {
	raw, ok := pod.Annotations[v1alpha1.ApprovedAnnotation]
	if !ok {
		r.Message = fmt.Sprintf("the webhook did not approve the request: namespace %q is not opted in (label %s=true), so the pod would be created without networks", r.Namespace, v1alpha1.EnabledLabel)
		if nsLabels[v1alpha1.EnabledLabel] == "true" {
			r.Message = "the pod would be created without an approval: the webhook did not answer for it"
		}
		return r
	}
	a, err := decodeApproval(raw)
	if err != nil {
		r.Message = err.Error()
		return r
	}
	r.Allowed = true
	r.Interfaces = a.Interfaces
	return r
}

// exitCode maps a result to the command's exit code.
func (r CanIResult) exitCode() int {
	if r.Allowed {
		return exitAllowed
	}
	return exitDenied
}

// canIPod is the minimal pod the dry run creates: one container, the
// request and the service account, nothing else.
func canIPod(namespace, serviceAccount, request string) *corev1.Pod {
	p := &corev1.Pod{}
	p.Namespace = namespace
	p.GenerateName = "podnet-can-i-"
	p.Annotations = map[string]string{v1alpha1.NetworksAnnotation: request}
	p.Spec.ServiceAccountName = serviceAccount
	p.Spec.Containers = []corev1.Container{{Name: "app", Image: "podnet.io/can-i"}}
	return p
}
