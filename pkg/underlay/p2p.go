package underlay

import (
	"fmt"
	"net/netip"
)

// PointToPoint is the tunnel of point-to-point VXLAN devices of this node
// (a pod's tunnel to an endpoint outside the cluster): the port and VNI
// accept packets only from the remotes. A node has one device of a port
// and VNI (Key), so one pod's tunnel holds it (Reserve) and remotes
// lists that tunnel's one far end; a lock read back from the table may
// list more.
func PointToPoint(port uint16, vni uint32, family Family, remotes []netip.Addr) Tunnel {
	return Tunnel{Name: fmt.Sprintf("tun-%d-%d", port, vni), Proto: UDP, Port: port, Family: family, Segment: VXLANSegment(vni), Peers: remotes}
}
