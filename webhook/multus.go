package webhook

import (
	"fmt"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// A webhook that reads Multus' request annotation (Handler.MultusRequests)
// admits a pod written for Multus, with only k8s.v1.cni.cncf.io/networks,
// as if it carried the same value under podnet.io/networks, and the
// admitted pod does carry it, so the approval, its binding to the request
// and the agent work as for any podnet request. Workloads move from
// Multus without an edit.

// translateMultus reads the request of a pod written for Multus: copied is
// true when Multus' annotation is the pod's request and podnet's must be
// set to it. A pod with both annotations is admitted as it is only when
// they say the same (as they do after the copy); two different requests
// for one pod are refused, since podnet could honour only one of them. It
// is pure: pod is only read.
func translateMultus(pod *corev1.Pod) (request string, copied bool, err error) {
	multus, fromMultus := pod.Annotations[v1alpha1.MultusNetworksAnnotation]
	own, hasOwn := pod.Annotations[v1alpha1.NetworksAnnotation]
	switch {
	case !fromMultus || (hasOwn && own == multus):
		return "", false, nil
	case hasOwn:
		return "", false, fmt.Errorf("pod %s carries both %s and %s, and they differ: podnet reads Multus' annotation only as a copy of its own request; keep one of them (or make them equal)",
			podName(pod), v1alpha1.MultusNetworksAnnotation, v1alpha1.NetworksAnnotation)
	}
	return multus, true, nil
}

// readFromMultus completes the outcome of a pod admitted with the request
// copied from Multus' annotation: a denial says where the request came
// from, and an admission makes the copy first (the approval's annotations
// were planned against the pod that already has it, and the annotations
// map exists: it holds Multus' key).
func readFromMultus(out outcome, request string) outcome {
	if !out.resp.Allowed {
		if out.resp.Result != nil {
			out.resp.Result.Message = fmt.Sprintf("(request read from %s) %s", v1alpha1.MultusNetworksAnnotation, out.resp.Result.Message)
		}
		return out
	}
	copyOp := jsonpatch.JsonPatchOperation{Operation: "add", Path: "/metadata/annotations/" + escapePointer(v1alpha1.NetworksAnnotation), Value: request}
	out.resp.Patches = append([]jsonpatch.JsonPatchOperation{copyOp}, out.resp.Patches...)
	return out
}
