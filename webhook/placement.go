package webhook

import (
	"fmt"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/carry"
	"podnet.io/podnet/pkg/policy"
)

// placement is the pod's affinity once it requires of its node what each
// approved network needs (pkg/carry: the node labels the agents keep, and
// the profile network's nodeSelector), or nil when the pod needs nothing
// more of its node than it already asks: the scheduler then puts it only
// where its networks can be attached. A pod that names its node
// (spec.nodeName) skips the scheduler and gets no affinity: the kubelet
// would refuse it with a bare NodeAffinity failure, where the agent of a
// node that cannot carry a network says which and why (NodeCannotCarry).
// The webhook reads no Node: the labels are the agents' answer.
func placement(set *policy.ProfileSet, pod *corev1.Pod, appr *v1alpha1.Approval) (*corev1.Affinity, error) {
	if pod.Spec.NodeName != "" || set == nil {
		return nil, nil
	}
	var reqs []corev1.NodeSelectorRequirement
	for i, ifc := range appr.Interfaces {
		network := set.Network(ifc.Profile, ifc.Network)
		if network == nil {
			continue
		}
		r, err := carry.Requirements(network, field.NewPath("networkprofile", ifc.Profile, "spec", "networks").Key(ifc.Network))
		if err != nil {
			return nil, fmt.Errorf("interface %d (%s, network %q): %w", i, ifc.Interface, ifc.Network, err)
		}
		reqs = append(reqs, r...)
	}
	aff, changed := carry.RequireOnPod(pod.Spec.Affinity, reqs)
	if !changed {
		return nil, nil
	}
	return aff, nil
}

// planAffinity sets the pod's affinity to want.
func planAffinity(pod *corev1.Pod, want *corev1.Affinity) []jsonpatch.JsonPatchOperation {
	op := "replace"
	if pod.Spec.Affinity == nil {
		op = "add"
	}
	return []jsonpatch.JsonPatchOperation{{Operation: op, Path: "/spec/affinity", Value: want}}
}
