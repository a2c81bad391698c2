package dataplane

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
)

// TestRootSecondTunnelOfOnePortAndVNI: the node holds one VXLAN device
// per port and VNI, whichever pod it sits in. A second pod's tunnel of
// the first's port and VNI (another remote) is refused, the error names
// the port and VNI rather than a name clash, NotMade names the interface,
// nothing of it is left in the pod, and the first pod's tunnel is
// untouched and still carries traffic.
func TestRootSecondTunnelOfOnePortAndVNI(t *testing.T) {
	d, node := newNode(t)
	out := outside(t, node)
	run(t, "ip", "-n", out, "link", "add", "vx0", "type", "vxlan", "id", "5001", "remote", "10.99.0.1", "local", "10.99.0.2", "dstport", "4789", "nolearning")
	run(t, "ip", "-n", out, "addr", "add", "10.71.0.1/24", "dev", "vx0")
	run(t, "ip", "-n", out, "link", "set", "vx0", "up")
	tunnel := func(remote string) *Tunnel {
		return &Tunnel{Remote: netip.MustParseAddrPort(remote), VNI: 5001, Dev: "uplink", Local: net.ParseIP("10.99.0.1").To4()}
	}
	podA, a := newPod(t)
	a.Interfaces = []Interface{{Name: "net1", Kind: KindVXLANTunnel, Addresses: []net.IPNet{cidr(t, "10.71.0.2/24")}, Tunnel: tunnel("10.99.0.2:4789")}}
	apply(t, d, a)
	index := mustLink(t, podA, "net1").Attrs().Index

	podB, b := newPod(t)
	b.Interfaces = []Interface{{Name: "net1", Kind: KindVXLANTunnel, Addresses: []net.IPNet{cidr(t, "10.71.0.3/24")}, Tunnel: tunnel("10.99.0.6:4789")}}
	_, err := d.Apply(context.Background(), b)
	requireMentions(t, err, `"net1"`, "vxlan device of port 4789 and vni 5001")
	if got := NotMade(err); !slices.Equal(got, []string{"net1"}) {
		t.Fatalf("NotMade %v, want [net1]: %v", got, err)
	}
	if got := linkNames(t, podB); len(got) != 0 {
		t.Fatalf("the refused pod has links %v", got)
	}
	if l := mustLink(t, podA, "net1").(*netlink.Vxlan); l.Attrs().Index != index || !l.Group.Equal(net.ParseIP("10.99.0.2")) {
		t.Fatalf("the first pod's tunnel changed: %+v", l)
	}
	if !ping(t, podA, "10.71.0.1") {
		t.Fatal("the first pod's tunnel no longer carries traffic")
	}

}
