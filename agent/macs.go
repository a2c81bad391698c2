package agent

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/macpool"
	"podnet.io/podnet/pkg/policy"
)

// An interface of a network with a macRange, and every interface with a
// static MAC, holds its MAC through a MACClaim (package macpool), taken
// with its addresses before the sandbox is needed and released with them
// (IPAM.Release): no two pod interfaces of the cluster carry one MAC
// (policy.MACClaimRange). Before the interfaces are built, their MACs are
// checked against the node's (nodemacs.go).
//
// +kubebuilder:rbac:groups=podnet.io,resources=macclaims,verbs=get;list;watch;create;delete

// MACs claims the MAC of a pod interface whose approval carries a range or
// a static MAC.
type MACs interface {
	EnsureMAC(ctx context.Context, pod *corev1.Pod, ai v1alpha1.ApprovedInterface) (string, error)
}

// EnsureMAC implements MACs. A static MAC is checked against the range
// with the webhook's own rule before it is claimed; without a range it is
// claimed alone.
func (i IPAM) EnsureMAC(ctx context.Context, pod *corev1.Pod, ai v1alpha1.ApprovedInterface) (string, error) {
	r := policy.MACClaimRange(ai)
	if r == nil {
		return "", fmt.Errorf("pod %s/%s: network %q interface %q has neither a macRange nor a static MAC to claim", pod.Namespace, pod.Name, ai.Network, ai.Interface)
	}
	if i.MACs == nil {
		return "", fmt.Errorf("pod %s/%s: network %q has MACs to claim but the agent has no MAC allocator", pod.Namespace, pod.Name, ai.Network)
	}
	if ai.MAC != "" {
		if err := policy.CheckMACInRange(ai.MAC, r); err != nil {
			return "", fmt.Errorf("network %q: %w", ai.Network, err)
		}
	}
	owner := ownerOf(pod, ai)
	if _, err := i.MACs.Adopt(ctx, owner, ai.Network, ai.Interface); err != nil {
		return "", err
	}
	mac, err := i.MACs.Ensure(ctx, owner, ai.Network, ai.Interface, ai.MAC, *r)
	if err != nil {
		return "", err
	}
	return mac.String(), nil
}

// ensureMACs claims the MAC of every interface with a macRange or a
// static MAC and writes it into the approval the dataplane is planned
// from.
func (r *Reconciler) ensureMACs(ctx context.Context, pod *corev1.Pod, a *v1alpha1.Approval) error {
	var errs []error
	for k := range a.Interfaces {
		ai := &a.Interfaces[k]
		if policy.MACClaimRange(*ai) == nil {
			continue
		}
		if r.MACs == nil {
			errs = append(errs, fmt.Errorf("interface %q network %q: the agent has no MAC allocator", ai.Interface, ai.Network))
			continue
		}
		mac, err := r.MACs.EnsureMAC(ctx, pod, *ai)
		if err != nil {
			errs = append(errs, fmt.Errorf("interface %q network %q: %w", ai.Interface, ai.Network, err))
			continue
		}
		ai.MAC = mac
	}
	return errors.Join(errs...)
}

// macQuotaExceeded reports a full MAC quota, a reason of its own.
func macQuotaExceeded(err error) bool {
	var over *macpool.QuotaExceededError
	return errors.As(err, &over)
}

// holdsClaims reports whether an approved interface holds claims: IP
// addresses, or a MAC (of its network's range, or static).
func holdsClaims(ai v1alpha1.ApprovedInterface) bool {
	return ai.IPAM != nil || policy.MACClaimRange(ai) != nil
}
