package policy

import (
	"fmt"
	"net"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// A MAC is a forwarding decision on a bridge: the node's FDB sends a MAC's
// frames to the port that last sent from it, and port security lets a port
// send from the MAC its pod link carries. A pod that carries another's MAC
// thus takes that other's frames. Three rules keep a tenant's static MAC
// its own:
//
//   - every static MAC is claimed cluster-wide (MACClaimRange), whether or
//     not its network has a macRange, so no two pod interfaces hold one;
//   - at admission, a MAC that is a gateway's by standard (the virtual
//     router MACs of VRRP and HSRP, gatewayMAC) is refused; podnet knows
//     gateways by IP only, so no other gateway MAC is known there;
//   - on the node, the agent refuses a MAC that one of the node's links
//     carries (bridge, uplink, VXLAN device, pod ports' node ends) or that
//     the node's bridges hold in their FDB for another port (CheckNodeMAC):
//     the bridge's, the uplink's, a router's beyond the uplink, a pod's.
//
// Kernel-chosen MACs (no static MAC, no macRange) are not claimed: a
// static MAC equal to one is refused only where the node sees it (a pod of
// the same node, or a MAC its bridges learned). A network whose every MAC
// must be unique cluster-wide sets a macRange: every interface then holds
// a claim.

// MACClaimRange is the range an approved interface's MAC is claimed from:
// its network's macRange, or for a static MAC on a network without one,
// the range of that MAC alone (no quota); nil when the kernel chooses the
// MAC. The agent claims every interface with a range before it builds it.
func MACClaimRange(ai v1alpha1.ApprovedInterface) *v1alpha1.ApprovedMACRange {
	if ai.MACRange != nil {
		return ai.MACRange
	}
	if ai.MAC == "" {
		return nil
	}
	return &v1alpha1.ApprovedMACRange{Start: ai.MAC, End: ai.MAC}
}

// gatewayMACs are the MAC blocks of virtual routers (RFC 5798 VRRP for
// IPv4 and IPv6, Cisco HSRP versions 1 and 2): a LAN's gateway answers
// from one of them. A block is its first MAC and the bits fixed in it.
var gatewayMACs = []struct {
	first uint64
	bits  uint
	what  string
}{
	{0x00005e000100, 40, "the virtual router MAC of IPv4 VRRP (00:00:5e:00:01:xx), a gateway's"},
	{0x00005e000200, 40, "the virtual router MAC of IPv6 VRRP (00:00:5e:00:02:xx), a gateway's"},
	{0x00000c07ac00, 40, "the virtual router MAC of HSRP (00:00:0c:07:ac:xx), a gateway's"},
	{0x00000c9ff000, 36, "the virtual router MAC of HSRP version 2 (00:00:0c:9f:fx:xx), a gateway's"},
}

// gatewayMAC says whose gateway MAC mac (6 octets) is, "" if none.
func gatewayMAC(mac net.HardwareAddr) string {
	var n uint64
	for _, b := range mac {
		n = n<<8 | uint64(b)
	}
	for _, g := range gatewayMACs {
		if n>>(48-g.bits) == g.first>>(48-g.bits) {
			return g.what
		}
	}
	return ""
}

// NodeMAC is a MAC in use on a node: a link's own, or one a bridge's FDB
// holds for a port.
type NodeMAC struct {
	// MAC is written aa:bb:cc:dd:ee:ff.
	MAC string
	// Of words what carries it, e.g. `bridge "pnbr-data"` or `a port of
	// bridge "pnbr-data" (pn0123456789abc)`.
	Of string
}

// CheckNodeMAC refuses mac, the MAC of a pod interface at path p, when the
// node uses it already (seen, without the pod's own ports). The agent calls
// it before it builds anything.
func CheckNodeMAC(p *field.Path, mac string, seen []NodeMAC) *field.Error {
	want, err := net.ParseMAC(mac)
	if err != nil {
		return field.Invalid(p, mac, "not an Ethernet MAC address")
	}
	for _, s := range seen {
		have, err := net.ParseMAC(s.MAC)
		if err == nil && have.String() == want.String() {
			return field.Invalid(p, mac, fmt.Sprintf("is the MAC of %s on this node; a pod's mac must not be a bridge's, an uplink's, a gateway's or another pod's MAC", s.Of))
		}
	}
	return nil
}
