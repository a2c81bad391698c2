package agent

import (
	"context"
	"errors"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/pkg/macpool"
)

// IPAM adapts the claim allocator to the Addresses seam.
type IPAM struct {
	Allocator *ipam.Allocator
	// MACs claims the MACs of networks with a macRange and static MACs;
	// Release frees them with the addresses.
	MACs *macpool.Allocator
}

// Ensure implements Addresses.
func (i IPAM) Ensure(ctx context.Context, pod *corev1.Pod, ai v1alpha1.ApprovedInterface) ([]net.IPNet, error) {
	if ai.IPAM == nil {
		return nil, nil
	}
	owner := ownerOf(pod, ai)
	space, err := ipam.SpaceOf(ai)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if _, err := i.Allocator.Adopt(ctx, owner, ai.Network, ai.Interface); err != nil {
		return nil, err
	}
	approved := *ai.IPAM
	approved.AddressSpace = space
	return i.Allocator.Ensure(ctx, owner, ai.Network, ai.Interface, approved)
}

// Release implements Addresses.
func (i IPAM) Release(ctx context.Context, pod podstate.Ref, network, iface string) error {
	err := i.Allocator.Release(ctx, pod.UID, network, iface)
	if i.MACs != nil {
		err = errors.Join(err, i.MACs.Release(ctx, pod.UID, network, iface))
	}
	return err
}

// SignedApprovals verifies approvals with the webhook's public keys.
type SignedApprovals struct {
	Keys approval.Verifier
	// Memo, if set, remembers what was verified: a pod is reconciled
	// several times as it starts (its sandbox, its IPs, its phase) and
	// at every resync, with the same approval.
	Memo *approval.Memo
}

// Verify implements Verifier. A pod that asks for networks without an
// approval is refused like one with a bad approval: it gets nothing.
func (s SignedApprovals) Verify(pod *corev1.Pod) (*v1alpha1.Approval, error) {
	verify := approval.VerifyPod
	if s.Memo != nil {
		verify = s.Memo.VerifyPod
	}
	a, err := verify(s.Keys, pod)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, errNoApproval)
	}
	return a, nil
}

var errNoApproval = errors.New("asks for networks (" + v1alpha1.NetworksAnnotation + ") but carries no approval (" + v1alpha1.ApprovedAnnotation + "); is the namespace opted in with " + v1alpha1.EnabledLabel + "?")
