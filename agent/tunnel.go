package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/underlay"
)

// TunnelLock locks the node's UDP port of each point-to-point VXLAN
// tunnel to its remote, so that no other pod can inject frames into it;
// *peers.Watch is the real one. It reserves each port and VNI for one pod
// (pod is "namespace/name", for its refusals). WireGuard needs none: it
// drops every packet its peer's key did not authenticate.
type TunnelLock interface {
	TrackTunnels(ctx context.Context, podUID, pod string, tunnels []underlay.Tunnel) error
}

// planTunnel translates an approved tunnel into the dataplane's.
func planTunnel(t *v1alpha1.ApprovedTunnel) (*dataplane.Tunnel, error) {
	if t == nil {
		return nil, nil
	}
	remote, err := netip.ParseAddrPort(t.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("tunnel.endpoint %q: %w", t.Endpoint, err)
	}
	out := &dataplane.Tunnel{Remote: netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port()), PeerPublicKey: t.PeerPublicKey, VNI: int(t.VNI), Dev: t.LocalInterface}
	for j, s := range t.AllowedIPs {
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			return nil, fmt.Errorf("tunnel.allowedIPs[%d] %q: %w", j, s, err)
		}
		out.AllowedIPs = append(out.AllowedIPs, *n)
	}
	if t.LocalAddress != "" {
		if out.Local = net.ParseIP(t.LocalAddress); out.Local == nil {
			return nil, fmt.Errorf("tunnel.localAddress %q: not an IP address", t.LocalAddress)
		}
		if v4 := out.Local.To4(); v4 != nil {
			out.Local = v4
		}
	}
	return out, nil
}

// lockTunnels hands the pod's VXLAN tunnels to the tunnel lock before the
// dataplane makes them (and tells it of none, so that a tunnel the pod
// lost is unlocked). A pod without tunnels, on an agent without a lock,
// costs nothing.
func (r *Reconciler) lockTunnels(ctx context.Context, ref podstate.Ref, p dataplane.Pod) error {
	return r.trackTunnels(ctx, ref, p, nil)
}

// unlockUnmade unlocks the pod's VXLAN tunnels whose device the kernel
// refused as existing (applyErr, dataplane.NotMade): another device holds
// their port and VNI, and their remotes must not be let into it. Nothing
// changes when every device was made.
func (r *Reconciler) unlockUnmade(ctx context.Context, ref podstate.Ref, p dataplane.Pod, applyErr error) error {
	unmade := dataplane.NotMade(applyErr)
	if len(unmade) == 0 {
		return nil
	}
	keep := map[string]bool{}
	for _, ifc := range p.Interfaces {
		keep[ifc.Name] = !slices.Contains(unmade, ifc.Name)
	}
	return r.trackTunnels(ctx, ref, p, keep)
}

// trackTunnels tells the lock the pod's VXLAN tunnels, only those of the
// named interfaces when only is not nil.
func (r *Reconciler) trackTunnels(ctx context.Context, ref podstate.Ref, p dataplane.Pod, only map[string]bool) error {
	var ts []underlay.Tunnel
	for _, ifc := range p.Interfaces {
		if ifc.Kind != dataplane.KindVXLANTunnel || ifc.Tunnel == nil || (only != nil && !only[ifc.Name]) {
			continue
		}
		family := underlay.IPv4
		if ifc.Tunnel.Remote.Addr().Is6() {
			family = underlay.IPv6
		}
		ts = append(ts, underlay.PointToPoint(ifc.Tunnel.Remote.Port(), uint32(ifc.Tunnel.VNI), family, []netip.Addr{ifc.Tunnel.Remote.Addr()}))
	}
	switch {
	case r.Tunnels != nil:
		if err := r.Tunnels.TrackTunnels(ctx, ref.UID, ref.Namespace+"/"+ref.Name, ts); err != nil {
			return fmt.Errorf("lock the node's tunnel ports: %w", err)
		}
	case len(ts) > 0:
		return errors.New("vxlan tunnel: this agent has no tunnel lock for the node's port")
	}
	return nil
}

// unlockTunnels forgets a pod's tunnels once its interfaces are gone.
func (r *Reconciler) unlockTunnels(ctx context.Context, ref podstate.Ref) error {
	if r.Tunnels == nil {
		return nil
	}
	return r.Tunnels.TrackTunnels(ctx, ref.UID, ref.Namespace+"/"+ref.Name, nil)
}

// tunnelStatus is the tunnel of an interface's network-status entry: the
// endpoint, and the pod's WireGuard public key as the device has it.
func tunnelStatus(ai v1alpha1.ApprovedInterface, s dataplane.InterfaceStatus) *v1alpha1.TunnelStatus {
	if ai.Tunnel == nil {
		return nil
	}
	return &v1alpha1.TunnelStatus{Kind: ai.Kind, Endpoint: ai.Tunnel.Endpoint, PublicKey: s.PublicKey, VNI: ai.Tunnel.VNI}
}
