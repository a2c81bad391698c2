package dra

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"podnet.io/podnet/api/v1alpha1"
)

// PreparedClaim is what NodePrepareResources learned of one claim: which
// of this node's podnet devices it holds, by request, and the pods it is
// reserved for.
type PreparedClaim struct {
	UID             types.UID
	Namespace, Name string
	// Devices are the claim's podnet devices of this node.
	Devices []resourceapi.DeviceRequestAllocationResult
	// Pods are the pods of the claim's status.reservedFor.
	Pods []types.NamespacedName
	// Claim is the claim as the kubelet plugin read it, for the preparer
	// to verify what was signed onto it.
	Claim *resourceapi.ResourceClaim
}

// ClaimPreparer does the work of a prepared claim on the node. Both
// calls must be idempotent: the kubelet asks again after it restarts.
// Unprepare of a claim it does not know is success. Prepare's errors
// name the claim: the kubelet shows them as they are.
type ClaimPreparer interface {
	Prepare(ctx context.Context, c PreparedClaim) error
	Unprepare(ctx context.Context, uid types.UID) error
}

// CheckClaim turns an allocated claim into a PreparedClaim, refusing one
// that is not allocated or holds no podnet device, or a podnet device of
// another node's pool. Devices of other drivers are not podnet's and are
// left to them.
func CheckClaim(node string, claim *resourceapi.ResourceClaim) (PreparedClaim, error) {
	name := claim.Namespace + "/" + claim.Name
	pc := PreparedClaim{UID: claim.UID, Namespace: claim.Namespace, Name: claim.Name, Claim: claim}
	if claim.Status.Allocation == nil {
		return pc, fmt.Errorf("resource claim %s: not allocated", name)
	}
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != v1alpha1.DRADriver {
			continue
		}
		if r.Pool != node {
			return pc, fmt.Errorf("resource claim %s: request %q holds device %q of pool %q, not of this node %q", name, r.Request, r.Device, r.Pool, node)
		}
		pc.Devices = append(pc.Devices, r)
	}
	if len(pc.Devices) == 0 {
		return pc, fmt.Errorf("resource claim %s: allocated no %s device", name, v1alpha1.DRADriver)
	}
	for _, c := range claim.Status.ReservedFor {
		if c.APIGroup == "" && c.Resource == "pods" {
			pc.Pods = append(pc.Pods, types.NamespacedName{Namespace: claim.Namespace, Name: c.Name})
		}
	}
	return pc, nil
}
