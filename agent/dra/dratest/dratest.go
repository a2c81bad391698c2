// Package dratest makes the resource claims and approvals the tests of
// podnet's DRA driver and of the agent's attach through claims prepare.
package dratest

import (
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"podnet.io/podnet/api/v1alpha1"
)

// Node is the node, and the pool, the claims are allocated on.
const Node = "node-1"

// Claim is a claim of namespace tenant allocated on Node with one podnet
// device per request (d0, d1, ...) and one device of another driver,
// reserved for the pod named pod (UID uid-<pod>).
func Claim(name, pod string, requests ...string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: name, UID: types.UID("claim-" + name)}}
	alloc := &resourceapi.AllocationResult{}
	for i, r := range requests {
		alloc.Devices.Results = append(alloc.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: r, Driver: v1alpha1.DRADriver, Pool: Node, Device: "d" + string(rune('0'+i))})
	}
	// Another driver's device of the same claim is not podnet's.
	alloc.Devices.Results = append(alloc.Devices.Results, resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: "gpu.example.com", Pool: Node, Device: "gpu0"})
	c.Status.Allocation = alloc
	c.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: pod, UID: types.UID("uid-" + pod)}}
	return c
}

// Approval is an approval of namespace tenant through profile p for one
// bridge interface of network data per name.
func Approval(ifaces ...string) *v1alpha1.Approval {
	a := &v1alpha1.Approval{Namespace: "tenant", Profiles: []v1alpha1.ProfileRef{{Name: "p", Generation: 1}}}
	for _, i := range ifaces {
		a.Interfaces = append(a.Interfaces, v1alpha1.ApprovedInterface{Interface: i, Network: "data", Kind: v1alpha1.KindBridge, Bridge: "pnbr-data"})
	}
	return a
}
