package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/agent/peers"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/policy"
)

// Underlays knows the nodes' underlay addresses and keeps the flood lists
// of the VXLAN bridges it is told about, and the node's tunnel table, in
// step with them; *peers.Watch is the real one, fed by the Node informer.
type Underlays interface {
	// NodeAddresses are this node's InternalIPs and the peers of span.
	NodeAddresses(ctx context.Context, span peers.Span) (own, others []net.IP, err error)
	// Track locks the node's tunnel port to the span's peers and makes
	// later node changes reach the flood list of the bridge's VXLAN
	// device; it returns once the lock is in place.
	Track(ctx context.Context, bridge string, span peers.Span) error
}

// resolveSpans completes the VXLAN interfaces of p with the node addresses
// (withUnderlay decides the source and the flood list), refuses a source
// address the network does not allow, and hands their bridges to the peer
// watch, which locks the node's tunnel port before the device exists. A
// pod without VXLAN interfaces costs nothing.
func (r *Reconciler) resolveSpans(ctx context.Context, p dataplane.Pod, a *v1alpha1.Approval) (dataplane.Pod, error) {
	if !slices.ContainsFunc(p.Interfaces, func(ifc dataplane.Interface) bool { return ifc.VXLAN != nil }) {
		return p, nil
	}
	if r.Underlays == nil {
		return p, errors.New("vxlan network: this agent has no source of peer nodes")
	}
	out := p
	out.Interfaces = slices.Clone(p.Interfaces)
	for i, ifc := range out.Interfaces {
		if ifc.VXLAN == nil {
			continue
		}
		span := spanOf(ifc, a)
		own, others, err := r.Underlays.NodeAddresses(ctx, span)
		if err != nil {
			return p, fmt.Errorf("vxlan underlay: %w", err)
		}
		done := withUnderlay(dataplane.Pod{Interfaces: []dataplane.Interface{ifc}}, own, others).Interfaces[0]
		if err := checkLocal(done.VXLAN, span.CIDRs); err != nil {
			return p, fmt.Errorf("interface %q: vxlan vni %d: this node cannot carry it: %w", ifc.Name, span.VNI, err)
		}
		if err := r.Underlays.Track(ctx, ifc.Bridge, span); err != nil {
			return p, fmt.Errorf("interface %q: vxlan vni %d: lock the node's tunnel port: %w", ifc.Name, span.VNI, err)
		}
		out.Interfaces[i] = done
	}
	return out, nil
}

// spanOf is what the peer watch needs of a VXLAN interface: its VNI, port
// and underlay family, and the underlay CIDRs its approval names.
func spanOf(ifc dataplane.Interface, a *v1alpha1.Approval) peers.Span {
	s := peers.Span{VNI: ifc.VXLAN.VNI, Port: ifc.VXLAN.Port, Family: corev1.IPv4Protocol}
	if s.Port == 0 {
		s.Port = policy.DefaultVXLANPort
	}
	if underlayFamily(ifc.VXLAN.Local) == net.IPv6len {
		s.Family = corev1.IPv6Protocol
	}
	if a != nil {
		for _, ai := range a.Interfaces {
			if ai.Interface == ifc.Name && ai.VXLAN != nil {
				s.CIDRs = ai.VXLAN.UnderlayCIDRs
			}
		}
	}
	return s
}

// checkLocal refuses a source address the network does not allow; with
// none (the kernel picks it through an underlay interface) there is
// nothing to check.
func checkLocal(vx *dataplane.VXLAN, cidrs []string) error {
	if vx.Local == nil {
		return nil
	}
	addr, ok := netip.AddrFromSlice(vx.Local)
	if !ok {
		return fmt.Errorf("source address %v: not an IP address", vx.Local)
	}
	return policy.CheckUnderlayAddress(addr, cidrs)
}
