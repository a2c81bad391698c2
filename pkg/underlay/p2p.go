package underlay

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
)

// PointToPoint is the tunnel of point-to-point VXLAN devices of this node
// (a pod's tunnel to an endpoint outside the cluster): the port and VNI
// accept packets only from the remotes. The node's devices of one port
// and VNI share the node's socket, so their remotes are one set.
func PointToPoint(port uint16, vni uint32, family Family, remotes []netip.Addr) Tunnel {
	return Tunnel{Name: fmt.Sprintf("tun-%d-%d", port, vni), Proto: UDP, Port: port, Family: family, Segment: VXLANSegment(vni), Peers: remotes}
}

// MergeTunnels joins tunnels of the same name into one with the union of
// their peers, sorted by name, so that several pods' tunnels of one port
// and VNI make one lock instead of a ruleset Plan refuses.
func MergeTunnels(in []Tunnel) []Tunnel {
	byName := map[string]int{}
	var out []Tunnel
	for _, t := range in {
		if i, ok := byName[t.Name]; ok {
			out[i].Peers = append(slices.Clone(out[i].Peers), t.Peers...)
			continue
		}
		byName[t.Name] = len(out)
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Tunnel) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
