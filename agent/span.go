package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/pkg/dataplane"
)

// Underlays knows the nodes' underlay addresses and keeps the flood lists
// of the VXLAN bridges it is told about in step with them; *peers.Watch is
// the real one, fed by the Node informer.
type Underlays interface {
	// NodeAddresses are this node's InternalIPs and every other node's.
	NodeAddresses(ctx context.Context) (own, others []net.IP, err error)
	// Track makes later node changes reach the flood list of the bridge's
	// VXLAN device, whose underlay is of the family.
	Track(bridge string, family corev1.IPFamily)
}

// resolveSpans completes the VXLAN interfaces of p with the node addresses
// (withUnderlay decides the source and the flood list) and hands their
// bridges to the peer watch. A pod without VXLAN interfaces costs nothing.
func (r *Reconciler) resolveSpans(ctx context.Context, p dataplane.Pod) (dataplane.Pod, error) {
	if !slices.ContainsFunc(p.Interfaces, func(ifc dataplane.Interface) bool { return ifc.VXLAN != nil }) {
		return p, nil
	}
	if r.Underlays == nil {
		return p, errors.New("vxlan network: this agent has no source of peer nodes")
	}
	own, others, err := r.Underlays.NodeAddresses(ctx)
	if err != nil {
		return p, fmt.Errorf("vxlan underlay: %w", err)
	}
	out := withUnderlay(p, own, others)
	for _, ifc := range out.Interfaces {
		if ifc.VXLAN == nil {
			continue
		}
		family := corev1.IPv4Protocol
		if underlayFamily(ifc.VXLAN.Local) == net.IPv6len {
			family = corev1.IPv6Protocol
		}
		r.Underlays.Track(ifc.Bridge, family)
	}
	return out, nil
}
