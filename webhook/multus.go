package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"podnet.io/podnet/api/v1alpha1"
)

// admitMultus is admit for a webhook that reads Multus' request annotation
// (Handler.MultusRequests): a pod written for Multus, with only
// k8s.v1.cni.cncf.io/networks, is admitted as if it carried the same value
// under podnet.io/networks, and the admitted pod does carry it, so the
// approval, its binding to the request and the agent work as for any podnet
// request. Workloads move from Multus without an edit.
//
// A pod with both annotations is admitted only when they say the same (as
// they do after the copy); two different requests for one pod are refused,
// since podnet could honour only one of them.
func (h *Handler) admitMultus(ctx context.Context, req admission.Request, d decoded) outcome {
	if !h.MultusRequests || req.Kind.Group != "" || req.Kind.Kind != "Pod" || req.SubResource != "" ||
		(req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return h.admit(ctx, req, d)
	}
	pod, err := d.object(req)
	if err != nil {
		return h.admit(ctx, req, d)
	}
	multus, fromMultus := pod.Annotations[v1alpha1.MultusNetworksAnnotation]
	own, hasOwn := pod.Annotations[v1alpha1.NetworksAnnotation]
	switch {
	case !fromMultus || (hasOwn && own == multus):
		return h.admit(ctx, req, d)
	case hasOwn:
		return deny(fmt.Sprintf("pod %s carries both %s and %s, and they differ: podnet reads Multus' annotation only as a copy of its own request; keep one of them (or make them equal)",
			podName(pod), v1alpha1.MultusNetworksAnnotation, v1alpha1.NetworksAnnotation))
	}
	pod.Annotations[v1alpha1.NetworksAnnotation] = multus
	if req.Object.Raw, err = json.Marshal(pod); err != nil {
		return errored(http.StatusInternalServerError, fmt.Errorf("pod %s: encode: %w", podName(pod), err))
	}
	// admit reads the rewritten pod from the request, not the pod above.
	out := h.admit(ctx, req, decoded{old: d.old})
	if !out.resp.Allowed {
		if out.resp.Result != nil {
			out.resp.Result.Message = fmt.Sprintf("(request read from %s) %s", v1alpha1.MultusNetworksAnnotation, out.resp.Result.Message)
		}
		return out
	}
	// The copy goes first: the approval's annotations are planned against
	// the pod that already has it, and the annotations map exists (it holds
	// Multus' key).
	copyOp := jsonpatch.JsonPatchOperation{Operation: "add", Path: "/metadata/annotations/" + escapePointer(v1alpha1.NetworksAnnotation), Value: multus}
	out.resp.Patches = append([]jsonpatch.JsonPatchOperation{copyOp}, out.resp.Patches...)
	return out
}
