package webhook

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/pkg/policy"
)

// The webhook reads the claims and templates a new pod names, one GET
// each, only for pods that name any: they are not cached, since every pod
// of a DRA workload has a claim of its own and the cache would hold them
// all, while a pod's admission needs only its own.
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims;resourceclaimtemplates,verbs=get

// podClaims reads the devices of every claim and template a new pod names
// (spec.resourceClaims). One that does not exist yet refuses the pod: its
// podnet requests, if any, decide what the pod must be (NET_RAW, the wait
// for its interfaces), and a pod admitted without them would be refused
// by the agent later, without a word to the tenant. The ReplicaSet or Job
// that made the pod makes it again; a template applied together with its
// Deployment is there by then.
func (h *Handler) podClaims(ctx context.Context, pod *corev1.Pod) ([]policy.PodClaim, *outcome) {
	if h.Claims == nil {
		err := fmt.Errorf("podnet webhook cannot read the resource claims of pod %s: no claim reader configured", podName(pod))
		out := errored(http.StatusServiceUnavailable, err)
		return nil, &out
	}
	out := make([]policy.PodClaim, 0, len(pod.Spec.ResourceClaims))
	for i, rc := range pod.Spec.ResourceClaims {
		entry := fmt.Sprintf("spec.resourceClaims[%d]", i)
		var obj client.Object
		var devices *resourcev1.DeviceClaim
		var kind, name string
		switch {
		case rc.ResourceClaimTemplateName != nil:
			t := &resourcev1.ResourceClaimTemplate{}
			obj, devices, kind, name = t, &t.Spec.Spec.Devices, "resourceclaimtemplate", *rc.ResourceClaimTemplateName
		case rc.ResourceClaimName != nil:
			c := &resourcev1.ResourceClaim{}
			obj, devices, kind, name = c, &c.Spec.Devices, "resourceclaim", *rc.ResourceClaimName
		default:
			// The API server refuses an entry that names neither.
			continue
		}
		err := h.Claims.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			o := deny(fmt.Sprintf("pod %s: %s names %s %s, which does not exist in namespace %q: podnet cannot tell which networks it asks for; create it before the pod", podName(pod), entry, kind, name, pod.Namespace))
			return nil, &o
		case err != nil:
			o := errored(http.StatusServiceUnavailable, fmt.Errorf("get %s %s/%s of pod %s: %w", kind, pod.Namespace, name, podName(pod), err))
			return nil, &o
		}
		out = append(out, policy.PodClaim{Source: fmt.Sprintf("%s (%s %s)", entry, kind, name), Devices: devices})
	}
	return out, nil
}
