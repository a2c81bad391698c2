package agent

import (
	"context"
	"errors"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/pkg/dataplane"
)

// Underlays knows this node's underlay address and the other nodes' (the
// peers of a VXLAN overlay); *peers.Watch is the real one, fed by the Node
// informer.
type Underlays interface {
	Underlay(ctx context.Context, bridge string, family corev1.IPFamily) (local net.IP, peers []net.IP, err error)
}

// resolveSpans fills in what an approval cannot know about each VXLAN
// interface of the pod: the flood list (every other node's address of the
// underlay's family) and, when the approval names neither a source address
// nor an underlay interface, this node's InternalIP as the source.
func (r *Reconciler) resolveSpans(ctx context.Context, p *dataplane.Pod) error {
	for i := range p.Interfaces {
		vx := p.Interfaces[i].VXLAN
		if vx == nil {
			continue
		}
		if r.Underlays == nil {
			return errors.New("vxlan network: this agent has no source of peer nodes")
		}
		local, peers, err := r.Underlays.Underlay(ctx, p.Interfaces[i].Bridge, underlayFamily(vx))
		if err != nil {
			return fmt.Errorf("interface %q: %w", p.Interfaces[i].Name, err)
		}
		if vx.Local == nil && vx.Dev == "" {
			vx.Local = local
		}
		vx.Peers = peers
	}
	return nil
}

// underlayFamily is IPv6 only when the approval names an IPv6 source
// address, as the NetworkProfile's vxlan.local documents.
func underlayFamily(vx *dataplane.VXLAN) corev1.IPFamily {
	if vx.Local != nil && vx.Local.To4() == nil {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}
