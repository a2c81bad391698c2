package dataplane

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

// kindCase is one link kind (and mode) with the kernel features it needs.
type kindCase struct {
	name     string
	features []string
	ifc      Interface // Name, Kind and the kind's own fields
	podType  string    // the link type the pod gets
}

// everyKind lists every link kind and every mode the API allows.
var everyKind = []kindCase{
	{"bridge", []string{"veth", "bridge"}, Interface{Kind: KindBridge, Bridge: "pnbr-k"}, "veth"},
	{"bridge-vlan", []string{"veth", "bridge vlan_filtering"}, Interface{Kind: KindBridge, Bridge: "pnbr-k", VLAN: 100}, "veth"},
	{"vlan", []string{"veth", "bridge", "8021q"}, Interface{Kind: KindVLAN, Master: "eth1", VLAN: 100}, "veth"},
	{"macvlan-bridge", []string{"macvlan"}, Interface{Kind: KindMacvlan, Master: "eth1", Mode: "bridge"}, "macvlan"},
	{"macvlan-private", []string{"macvlan"}, Interface{Kind: KindMacvlan, Master: "eth1", Mode: "private"}, "macvlan"},
	{"macvlan-vepa", []string{"macvlan"}, Interface{Kind: KindMacvlan, Master: "eth1", Mode: "vepa"}, "macvlan"},
	{"macvlan-passthru", []string{"macvlan"}, Interface{Kind: KindMacvlan, Master: "eth1", Mode: "passthru"}, "macvlan"},
	{"ipvlan-l2", []string{"ipvlan"}, Interface{Kind: KindIPVlan, Master: "eth1", Mode: "l2"}, "ipvlan"},
	{"ipvlan-l3", []string{"ipvlan"}, Interface{Kind: KindIPVlan, Master: "eth1", Mode: "l3"}, "ipvlan"},
	{"ipvlan-l3s", []string{"ipvlan"}, Interface{Kind: KindIPVlan, Master: "eth1", Mode: "l3s"}, "ipvlan"},
	{"wireguard", []string{"wireguard"}, Interface{Kind: KindWireGuard, Tunnel: &Tunnel{
		Remote: netip.MustParseAddrPort("10.99.0.2:51820"), PeerPublicKey: "HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw="}}, "wireguard"},
	{"vxlan-tunnel", []string{"vxlan"}, Interface{Kind: KindVXLANTunnel, Tunnel: &Tunnel{
		Remote: netip.MustParseAddrPort("10.99.0.2:4789"), VNI: 5001, Dev: "eth1"}}, "vxlan"},
	// The node's eth1 itself (a veth end here), taken whole and given back.
	{"host-device", []string{"veth"}, Interface{Kind: KindHostDevice, Devices: &DeviceSelector{Names: []string{"eth1"}}}, "veth"},
}

// TestRootEveryKindLifecycle takes one interface of every kind and mode
// through a running pod's life: added next to an interface the pod already
// has, with an MTU, IPv4 and IPv6 addresses and routes; changed in place
// (MTU, addresses, routes); removed; and the pod detached. The other
// interface is never touched, and the node ends as it began.
func TestRootEveryKindLifecycle(t *testing.T) {
	for _, kc := range everyKind {
		t.Run(kc.name, func(t *testing.T) {
			requireKernel(t, kc.features...)
			d, node := newNode(t)
			parent, _ := addOutside(t, node)
			run(t, "ip", "-n", node, "link", "set", parent, "mtu", "9000")
			nodeBefore := linkNames(t, node)
			podNS, p := newPod(t)
			keep := Interface{Name: "net9", Kind: KindBridge, Bridge: "pnbr-keep", Addresses: []net.IPNet{cidr(t, "10.99.0.5/24")}, AcceptRA: true}
			p.Interfaces = []Interface{keep}
			apply(t, d, p)
			keepIndex := mustLink(t, podNS, "net9").Attrs().Index
			nodeWithKeep := linkNames(t, node)

			ifc := kc.ifc
			ifc.Name, ifc.MTU = "net1", 1400
			ifc.Addresses = []net.IPNet{cidr(t, "192.168.90.5/24"), cidr(t, "fd00:90::5/64")}
			ifc.Routes = []Route{
				{Dst: network(t, "10.90.0.0/16"), Gateway: net.ParseIP("192.168.90.1").To4()},
				{Dst: network(t, "fd00:99::/64"), Gateway: net.ParseIP("fd00:90::1")},
				{Dst: network(t, "10.91.0.0/16")},
			}
			p.Interfaces = []Interface{keep, ifc}
			st := apply(t, d, p)
			if len(st) != 2 || !slices.Equal(st[1].IPs, []string{"192.168.90.5/24", "fd00:90::5/64"}) || st[1].MTU != 1400 {
				t.Fatalf("statuses after adding net1: %+v", st)
			}
			l := mustLink(t, podNS, "net1")
			if l.Type() != kc.podType {
				t.Fatalf("net1 is a %s, want a %s", l.Type(), kc.podType)
			}
			requireMode(t, l, ifc.Mode)
			requireRouterSysctls(t, podNS, "net1", "0")
			requireRouterSysctls(t, podNS, "net9", "1") // AcceptRA: the kernel's defaults
			requireMTU(t, podNS, "net1", 1400)
			requirePodRoutes(t, podNS, "10.90.0.0/16 via 192.168.90.1", "fd00:99::/64 via fd00:90::1", "10.91.0.0/16")
			requireIdempotent(t, d, p, podNS, node)

			// Changed in place.
			index := l.Attrs().Index
			ifc.MTU = 1300
			ifc.Addresses = []net.IPNet{cidr(t, "192.168.91.5/24"), cidr(t, "fd00:91::5/64")}
			ifc.Routes = []Route{
				{Dst: network(t, "10.92.0.0/16"), Gateway: net.ParseIP("192.168.91.1").To4()},
				{Dst: network(t, "fd00:98::/64"), Gateway: net.ParseIP("fd00:91::1")},
			}
			p.Interfaces = []Interface{keep, ifc}
			st = apply(t, d, p)
			if got := mustLink(t, podNS, "net1").Attrs().Index; got != index {
				t.Fatalf("net1 was recreated for an MTU, address and route change: index %d, was %d", got, index)
			}
			if len(st) != 2 || !slices.Equal(st[1].IPs, []string{"192.168.91.5/24", "fd00:91::5/64"}) || st[1].MTU != 1300 {
				t.Fatalf("statuses after changing net1: %+v", st)
			}
			requirePodRoutes(t, podNS, "10.92.0.0/16 via 192.168.91.1", "fd00:98::/64 via fd00:91::1")
			requireIdempotent(t, d, p, podNS, node)

			// Removed: the node is back to what it had with net9 only.
			p.Interfaces = []Interface{keep}
			apply(t, d, p)
			if got := linkNames(t, podNS); !slices.Equal(got, []string{"net9"}) {
				t.Fatalf("pod links after removing net1: %v", got)
			}
			if got := linkNames(t, node); !slices.Equal(got, nodeWithKeep) {
				t.Fatalf("node links after removing net1: %v, want %v", got, nodeWithKeep)
			}
			if got := mustLink(t, podNS, "net9").Attrs().Index; got != keepIndex {
				t.Fatal("net9 was recreated")
			}
			detachAll(t, d, p)
			if got := linkNames(t, node); !slices.Equal(got, nodeBefore) {
				t.Fatalf("node links after detach: %v, want %v", got, nodeBefore)
			}
		})
	}
}

// requireMode asserts a macvlan's or ipvlan's mode ("" = not one of them).
func requireMode(t *testing.T, l netlink.Link, mode string) {
	t.Helper()
	got := ""
	switch v := l.(type) {
	case *netlink.Macvlan:
		got = macvlanModeNames[v.Mode]
	case *netlink.IPVlan:
		got = ipvlanModeNames[v.Mode]
	}
	if got != mode {
		t.Fatalf("%s: mode %q, want %q", l.Attrs().Name, got, mode)
	}
}

// TestRootBridgeVLAN puts pods on VLANs of one vlan_filtering bridge whose
// admin-made trunk port carries VLANs 100 and 200 tagged to the host across
// the wire: each pod port is untagged with its VLAN as PVID, so pods reach
// the pods and the outside host of their own VLAN only.
func TestRootBridgeVLAN(t *testing.T) {
	requireKernel(t, "bridge vlan_filtering", "8021q")
	d, node := newNode(t)
	trunk, outside := addOutside(t, node)
	run(t, "ip", "-n", outside, "link", "add", "link", "wire", "name", "wire.100", "type", "vlan", "id", "100")
	run(t, "ip", "-n", outside, "link", "add", "link", "wire", "name", "wire.200", "type", "vlan", "id", "200")
	outsideAddrs(t, outside, "wire.100", "192.168.80.254/24", "fd00:80::fe/64")
	outsideAddrs(t, outside, "wire.200", "192.168.81.254/24")
	outsideAddrs(t, outside, "lo", "10.80.0.1/32")

	nsA, a := newPod(t)
	_, b := newPod(t)
	nsC, c := newPod(t)
	vlanPort := func(vlan int, addrs ...string) []Interface {
		ifc := Interface{Name: "net1", Kind: KindBridge, Bridge: "pnbr-v", VLAN: vlan}
		for _, s := range addrs {
			ifc.Addresses = append(ifc.Addresses, cidr(t, s))
		}
		return []Interface{ifc}
	}
	a.Interfaces = vlanPort(100, "192.168.80.1/24", "fd00:80::1/64")
	a.Interfaces[0].MTU = 1400
	a.Interfaces[0].Routes = []Route{{Dst: network(t, "10.80.0.0/16"), Gateway: net.ParseIP("192.168.80.254").To4()}}
	b.Interfaces = vlanPort(100, "192.168.80.2/24", "fd00:80::2/64")
	// C is on VLAN 200 with an address in VLAN 100's subnet too.
	c.Interfaces = vlanPort(200, "192.168.81.3/24", "192.168.80.3/24")
	for _, p := range []Pod{a, b, c} {
		apply(t, d, p)
	}
	br, ok := mustLink(t, node, "pnbr-v").(*netlink.Bridge)
	if !ok || br.VlanFiltering == nil || !*br.VlanFiltering {
		t.Fatal("pnbr-v does not filter VLANs")
	}
	requireMTU(t, nsA, "net1", 1400)
	requireMTU(t, node, hostName(a.UID, "net1"), 1400)
	// The admin's trunk: VLANs 100 and 200, tagged.
	run(t, "ip", "-n", node, "link", "set", trunk, "master", "pnbr-v")
	nodeHandle := handle(t, node)
	for _, vid := range []uint16{100, 200} {
		if err := nodeHandle.BridgeVlanAdd(mustLink(t, node, trunk), vid, false, false, false, true); err != nil {
			t.Fatalf("trunk vlan %d: %v", vid, err)
		}
	}

	requirePings(t, "VLAN 100 on the bridge", nsA, "192.168.80.2", "fd00:80::2")
	requirePings(t, "VLAN 100 tagged on the trunk", nsA, "192.168.80.254", "fd00:80::fe", "10.80.0.1")
	requireNoPing(t, "VLAN 100 to VLAN 200", nsA, "192.168.80.3")
	requirePings(t, "VLAN 200 tagged on the trunk", nsC, "192.168.81.254")
	requireNoPing(t, "VLAN 200 to VLAN 100", nsC, "192.168.80.254", "192.168.80.2")
	requireIdempotent(t, d, a, nsA, node)

	// The PVID changes in place.
	port := mustLink(t, node, hostName(c.UID, "net1")).Attrs().Index
	c.Interfaces = vlanPort(100, "192.168.80.3/24")
	apply(t, d, c)
	if got := mustLink(t, node, hostName(c.UID, "net1")).Attrs().Index; got != port {
		t.Fatal("the port was recreated for a VLAN change")
	}
	requirePings(t, "after moving C to VLAN 100", nsC, "192.168.80.254", "192.168.80.1")
	requireIdempotent(t, d, c, nsC, node)

	// The pods go; the bridge stays while the admin's trunk is in it, and
	// goes with garbage collection once the trunk has left.
	detachAll(t, d, a, b, c)
	if got := linkNames(t, node); !slices.Equal(got, []string{trunk, "pnbr-v"}) {
		t.Fatalf("node links after the pods left: %v", got)
	}
	run(t, "ip", "-n", node, "link", "set", trunk, "nomaster")
	if _, err := d.CollectGarbage(context.Background(), func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if got := linkNames(t, node); !slices.Equal(got, []string{trunk}) {
		t.Fatalf("node links after collection: %v", got)
	}
}

// TestRootVLANSharedByPods puts three pods of one node on VLANs of one
// NIC: the two on VLAN 100 share one node subinterface (the kernel allows
// one per NIC and VLAN id), reach each other and the host across the wire,
// tagged; the one on VLAN 200 reaches neither. The shared subinterface goes
// with its last pod.
func TestRootVLANSharedByPods(t *testing.T) {
	requireKernel(t, "veth", "bridge", "8021q")
	d, node := newNode(t)
	parent, outside := addOutside(t, node)
	run(t, "ip", "-n", node, "link", "set", parent, "mtu", "9000")
	run(t, "ip", "-n", outside, "link", "set", "wire", "mtu", "9000")
	run(t, "ip", "-n", outside, "link", "add", "link", "wire", "name", "wire.100", "type", "vlan", "id", "100")
	run(t, "ip", "-n", outside, "link", "add", "link", "wire", "name", "wire.200", "type", "vlan", "id", "200")
	outsideAddrs(t, outside, "wire.100", "192.168.70.254/24", "fd00:70::fe/64")
	outsideAddrs(t, outside, "wire.200", "192.168.71.254/24")
	outsideAddrs(t, outside, "lo", "10.70.0.1/32")

	nsA, a := newPod(t)
	nsB, b := newPod(t)
	nsC, c := newPod(t)
	vlanIfc := func(vlan int, addrs ...string) []Interface {
		ifc := Interface{Name: "net1", Kind: KindVLAN, Master: parent, VLAN: vlan}
		for _, s := range addrs {
			ifc.Addresses = append(ifc.Addresses, cidr(t, s))
		}
		return []Interface{ifc}
	}
	a.Interfaces = vlanIfc(100, "192.168.70.1/24", "fd00:70::1/64")
	a.Interfaces[0].Routes = []Route{{Dst: network(t, "10.70.0.0/16"), Gateway: net.ParseIP("192.168.70.254").To4()}}
	b.Interfaces = vlanIfc(100, "192.168.70.2/24", "fd00:70::2/64")
	b.Interfaces[0].MTU = 1500
	c.Interfaces = vlanIfc(200, "192.168.71.3/24", "192.168.70.3/24")
	for _, p := range []Pod{a, b, c} {
		apply(t, d, p)
	}
	requireMTU(t, nsA, "net1", 9000) // the parent's
	requireMTU(t, nsB, "net1", 1500)
	uplink100, uplink200 := vlanUplinkName(parent, 100), vlanUplinkName(parent, 200)
	for vid, name := range map[int]string{100: uplink100, 200: uplink200} {
		v, ok := mustLink(t, node, name).(*netlink.Vlan)
		if !ok || v.VlanId != vid || v.ParentIndex != mustLink(t, node, parent).Attrs().Index || v.Alias != uplinkAlias ||
			v.MasterIndex != mustLink(t, node, vlanBridgeName(parent, vid)).Attrs().Index {
			t.Fatalf("uplink of vlan %d: %+v", vid, mustLink(t, node, name).Attrs())
		}
	}

	requirePings(t, "two pods on VLAN 100", nsA, "192.168.70.2", "fd00:70::2")
	requirePings(t, "VLAN 100 tagged on the wire", nsB, "192.168.70.254", "fd00:70::fe")
	requirePings(t, "a route through VLAN 100", nsA, "10.70.0.1")
	requirePings(t, "VLAN 200 tagged on the wire", nsC, "192.168.71.254")
	requireNoPing(t, "VLAN 200 to VLAN 100", nsC, "192.168.70.254", "192.168.70.1")
	requireIdempotent(t, d, a, nsA, node)

	// C moves to VLAN 100 in place; VLAN 200's uplink goes with it.
	index := mustLink(t, nsC, "net1").Attrs().Index
	c.Interfaces = vlanIfc(100, "192.168.70.3/24")
	apply(t, d, c)
	if mustLink(t, nsC, "net1").Attrs().Index != index {
		t.Fatal("net1 of pod C was recreated for a VLAN change")
	}
	requirePings(t, "C after moving to VLAN 100", nsC, "192.168.70.254", "192.168.70.1")
	if got := linkNames(t, node); slices.Contains(got, uplink200) || slices.Contains(got, vlanBridgeName(parent, 200)) {
		t.Fatalf("VLAN 200's uplink or bridge outlived its last pod: %v", got)
	}

	// The uplink stays while a pod uses it, and goes with the last.
	b.Interfaces = nil
	apply(t, d, b)
	requirePings(t, "A after B left", nsA, "192.168.70.254", "192.168.70.3")
	detachAll(t, d, a, b, c)
	if got := linkNames(t, node); !slices.Equal(got, []string{parent}) {
		t.Fatalf("node links after every pod left: %v", got)
	}
}

// TestRootVLANOfForeignSubinterfaceIsRefused asks for a VLAN whose
// subinterface the admin already made on the NIC: the kernel allows only
// one, so podnet refuses, naming the VLAN, the NIC and why, and leaves
// nothing behind.
func TestRootVLANOfForeignSubinterfaceIsRefused(t *testing.T) {
	requireKernel(t, "veth", "bridge", "8021q")
	d, node := newNode(t)
	parent, _ := addOutside(t, node)
	run(t, "ip", "-n", node, "link", "add", "link", parent, "name", "eth1.300", "type", "vlan", "id", "300")
	nodeBefore := linkNames(t, node)
	podNS, p := newPod(t)
	p.Interfaces = []Interface{{Name: "net1", Kind: KindVLAN, Master: parent, VLAN: 300}}
	_, err := d.Apply(context.Background(), p)
	requireMentions(t, err, `interface "net1"`, `vlan 300 on "eth1"`, "podnet did not create", "one per parent and VLAN id")
	if got := linkNames(t, node); !slices.Equal(got, nodeBefore) {
		t.Fatalf("node links: %v, want %v", got, nodeBefore)
	}
	if got := linkNames(t, podNS); len(got) != 0 {
		t.Fatalf("pod links: %v", got)
	}
}

// TestRootIPVlanModes puts two pods on ipvlans of one NIC in each mode:
// they reach each other on IPv4 and IPv6; in l2 mode they also reach the
// host across the wire (l3 and l3s answer no ARP, so that host would need
// routes to them).
func TestRootIPVlanModes(t *testing.T) {
	requireKernel(t, "ipvlan")
	for _, mode := range ipvlanModes {
		t.Run(mode, func(t *testing.T) {
			d, node, parent := wiredNode(t, 60)
			nodeBefore := snapshot(t, node)
			nsA, a := newPod(t)
			_, b := newPod(t)
			a.Interfaces = onParent(t, KindIPVlan, parent, mode, 60, 1)
			b.Interfaces = onParent(t, KindIPVlan, parent, mode, 60, 2)
			apply(t, d, a)
			apply(t, d, b)
			requireMode(t, mustLink(t, nsA, "net1"), mode)
			requirePings(t, "ipvlan "+mode, nsA, "192.168.60.2", "fd00:60::2")
			if mode == "l2" {
				requirePings(t, "ipvlan l2 to the wire", nsA, "192.168.60.254", "fd00:60::fe")
			}
			requireIdempotent(t, d, a, nsA, node)
			detachAll(t, d, a, b)
			if got := snapshot(t, node); got != nodeBefore {
				t.Fatalf("the node changed:\nbefore:\n%s\nafter:\n%s", nodeBefore, got)
			}
		})
	}
}

func TestRootPrimaryMTU(t *testing.T) {
	d, _ := newNode(t)
	podNS, p := newPod(t)
	p.PrimaryMTU = 1400
	if _, err := d.Apply(context.Background(), p); err == nil || !strings.Contains(err.Error(), `"eth0"`) {
		t.Fatalf("pod without eth0: want an error naming eth0, got %v", err)
	}
	run(t, "ip", "-n", podNS, "link", "add", "eth0", "type", "veth", "peer", "name", "cni0")
	apply(t, d, p)
	if mtu := mustLink(t, podNS, "eth0").Attrs().MTU; mtu != 1400 {
		t.Fatalf("eth0 mtu %d", mtu)
	}
	requireIdempotent(t, d, p, podNS)
	p.PrimaryMTU = 0 // leave it alone
	apply(t, d, p)
	if mtu := mustLink(t, podNS, "eth0").Attrs().MTU; mtu != 1400 {
		t.Fatalf("eth0 mtu %d after PrimaryMTU 0", mtu)
	}
}

// TestRootVLANCleanupWithoutNetNS removes a VLAN network's node side by the
// marks alone (the pod's netns is gone), and collects an uplink that a run
// stopped before it was put into its bridge.
func TestRootVLANCleanupWithoutNetNS(t *testing.T) {
	requireKernel(t, "veth", "bridge", "8021q")
	d, node := newNode(t)
	parent, _ := addOutside(t, node)
	_, p := newPod(t)
	p.Interfaces = []Interface{{Name: "net1", Kind: KindVLAN, Master: parent, VLAN: 100}}
	apply(t, d, p)
	if err := d.Detach(context.Background(), p.UID, ""); err != nil {
		t.Fatal(err)
	}
	if got := linkNames(t, node); !slices.Equal(got, []string{parent}) {
		t.Fatalf("node links after detach by marks: %v", got)
	}
	stray := vlanUplinkName(parent, 200)
	run(t, "ip", "-n", node, "link", "add", "link", parent, "name", stray, "type", "vlan", "id", "200")
	run(t, "ip", "-n", node, "link", "set", stray, "alias", uplinkAlias)
	run(t, "ip", "-n", node, "link", "add", "link", parent, "name", "eth1.300", "type", "vlan", "id", "300")
	removed, err := d.CollectGarbage(context.Background(), func(string) bool { return true })
	if err != nil || !slices.Equal(removed, []string{stray}) {
		t.Fatalf("collected %v (%v), want only the stray uplink %s", removed, err, stray)
	}
	if got := linkNames(t, node); !slices.Equal(got, []string{parent, "eth1.300"}) {
		t.Fatalf("node links after collection: %v", got)
	}
}

// requireRouterSysctls checks a pod link's accept_ra and accept_redirects
// (IPv6 and IPv4).
func requireRouterSysctls(t *testing.T, podNS, link, want string) {
	t.Helper()
	for _, sc := range routerSysctls {
		p := filepath.Join(DefaultSysctlNet, fmt.Sprintf(sc.path, link))
		out, err := exec.Command("ip", "netns", "exec", podNS, "cat", p).CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != want {
			t.Errorf("%s in pod %s = %q (err %v), want %s", p, podNS, got, err, want)
		}
	}
}
