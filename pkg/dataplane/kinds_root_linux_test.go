package dataplane

import (
	"context"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

// kernelSupports tries a link type in the throwaway node netns: kernels
// built without ipvlan, 802.1Q or bridge VLAN filtering exist (this
// project's own CI machine is one), and podnet must then refuse clearly.
func kernelSupports(t *testing.T, node string, args ...string) bool {
	t.Helper()
	err := exec.Command("ip", append([]string{"-n", node, "link", "add"}, args...)...).Run()
	if err != nil {
		return false
	}
	run(t, "ip", "-n", node, "link", "del", args[0])
	return true
}

// requireRefusal checks the path taken when the kernel lacks a kind: a clear
// error naming the interface, the kind and the netns, the other interface
// applied, and nothing left of the refused one on either side.
func requireRefusal(t *testing.T, d *Dataplane, node, podNS, kind string, p Pod) {
	t.Helper()
	nodeBefore := linkNames(t, node)
	p.Interfaces = append(p.Interfaces, Interface{Name: "ok1", Kind: KindBridge, Bridge: "pnbr-ok"})
	st, err := d.Apply(context.Background(), p)
	if err == nil {
		t.Fatalf("apply of %s on a kernel without it succeeded", kind)
	}
	requireMentions(t, err, `interface "net1"`, "kernel has no "+kind, p.NetNS)
	if len(st) != 1 || st[0].Name != "ok1" {
		t.Fatalf("statuses %+v, want only ok1", st)
	}
	if got := linkNames(t, podNS); !slices.Equal(got, []string{"ok1"}) {
		t.Fatalf("pod links: %v, want only ok1", got)
	}
	want := append(slices.Clone(nodeBefore), hostName(p.UID, "ok1"), "pnbr-ok")
	slices.Sort(want)
	if got := linkNames(t, node); !slices.Equal(got, want) {
		t.Fatalf("node links: %v, want %v", got, want)
	}
	t.Logf("this kernel has no %s: checked the refusal (%v), not the %s data path", kind, err, kind)
}

// addSwitchedParents makes two NIC-like parents on the node whose far ends
// share a plain bridge, as two NICs on one switch.
func addSwitchedParents(t *testing.T, node string) (string, string) {
	t.Helper()
	a, b := addParent(t, node, "eth1"), addParent(t, node, "eth2")
	run(t, "ip", "-n", node, "link", "add", "switch", "type", "bridge")
	run(t, "ip", "-n", node, "link", "set", "switch", "up")
	run(t, "ip", "-n", node, "link", "set", "eth1-peer", "master", "switch")
	run(t, "ip", "-n", node, "link", "set", "eth2-peer", "master", "switch")
	return a, b
}

func TestRootIPVlan(t *testing.T) {
	d, node := newNode(t)
	parent := addParent(t, node, "eth1")
	nsA, a := newPod(t)
	a.Interfaces = []Interface{{Name: "net1", Kind: KindIPVlan, Master: parent, Addresses: []net.IPNet{cidr(t, "192.168.60.1/24"), cidr(t, "fd00:60::1/64")}}}
	if !kernelSupports(t, node, "pnprobe", "link", parent, "type", "ipvlan", "mode", "l2") {
		requireRefusal(t, d, node, nsA, "ipvlan", a)
		return
	}
	nsB, b := newPod(t)
	b.Interfaces = []Interface{{Name: "net1", Kind: KindIPVlan, Master: parent, Addresses: []net.IPNet{cidr(t, "192.168.60.2/24"), cidr(t, "fd00:60::2/64")}}}
	apply(t, d, a)
	apply(t, d, b)
	if l, ok := mustLink(t, nsA, "net1").(*netlink.IPVlan); !ok || l.Mode != netlink.IPVLAN_MODE_L2 {
		t.Fatalf("net1 in pod A is %T", mustLink(t, nsA, "net1"))
	}
	for _, ip := range []string{"192.168.60.2", "fd00:60::2"} {
		if !ping(t, nsA, ip) {
			t.Fatalf("ipvlan: pod A cannot reach %s", ip)
		}
	}
	requireIdempotent(t, d, a, nsA, node)
	for _, p := range []Pod{a, b} {
		if err := d.Detach(context.Background(), p.UID, p.NetNS); err != nil {
			t.Fatal(err)
		}
	}
	if got := linkNames(t, nsB); len(got) != 0 {
		t.Fatalf("pod B after detach: %v", got)
	}
}

func TestRootVLANSubinterface(t *testing.T) {
	d, node := newNode(t)
	eth1, eth2 := addSwitchedParents(t, node)
	nsA, a := newPod(t)
	vlanIfc := func(parent string, vlan int, addr string) []Interface {
		return []Interface{{Name: "net1", Kind: KindVLAN, Master: parent, VLAN: vlan, Addresses: []net.IPNet{cidr(t, addr)}}}
	}
	a.Interfaces = vlanIfc(eth1, 100, "192.168.70.1/24")
	if !kernelSupports(t, node, "pnprobe", "link", eth1, "type", "vlan", "id", "5") {
		requireRefusal(t, d, node, nsA, "vlan", a)
		return
	}
	_, b := newPod(t)
	_, c := newPod(t)
	b.Interfaces = vlanIfc(eth2, 100, "192.168.70.2/24")
	c.Interfaces = vlanIfc(eth2, 200, "192.168.70.3/24")
	nodeBefore := snapshot(t, node)
	for _, p := range []Pod{a, b, c} {
		apply(t, d, p)
	}
	if got := snapshot(t, node); got != nodeBefore {
		t.Fatal("VLAN subinterfaces changed the node (they must be created in the pod)")
	}
	if l, ok := mustLink(t, nsA, "net1").(*netlink.Vlan); !ok || l.VlanId != 100 {
		t.Fatalf("net1 in pod A: %T", mustLink(t, nsA, "net1"))
	}
	if !ping(t, nsA, "192.168.70.2") {
		t.Fatal("VLAN 100 on both sides: no connectivity")
	}
	if ping(t, nsA, "192.168.70.3") {
		t.Fatal("VLAN 100 reached VLAN 200")
	}
	requireIdempotent(t, d, a, nsA, node)
	// Another VLAN id needs another link: the kernel cannot change it.
	c.Interfaces = vlanIfc(eth2, 100, "192.168.70.3/24")
	apply(t, d, c)
	if !ping(t, nsA, "192.168.70.3") {
		t.Fatal("after moving C to VLAN 100: no connectivity")
	}
}

func TestRootBridgeVLAN(t *testing.T) {
	d, node := newNode(t)
	nsA, a := newPod(t)
	vlanPort := func(vlan int, addr string) []Interface {
		return []Interface{{Name: "net1", Kind: KindBridge, Bridge: "pnbr-v", VLAN: vlan, Addresses: []net.IPNet{cidr(t, addr)}}}
	}
	a.Interfaces = vlanPort(100, "192.168.80.1/24")
	if !kernelSupports(t, node, "pnprobe", "type", "bridge", "vlan_filtering", "1") {
		requireRefusal(t, d, node, nsA, "bridge vlan_filtering", a)
		return
	}
	_, b := newPod(t)
	_, c := newPod(t)
	b.Interfaces = vlanPort(100, "192.168.80.2/24")
	c.Interfaces = vlanPort(200, "192.168.80.3/24")
	for _, p := range []Pod{a, b, c} {
		apply(t, d, p)
	}
	br, ok := mustLink(t, node, "pnbr-v").(*netlink.Bridge)
	if !ok || br.VlanFiltering == nil || !*br.VlanFiltering {
		t.Fatal("pnbr-v does not filter VLANs")
	}
	if !ping(t, nsA, "192.168.80.2") {
		t.Fatal("same VLAN: no connectivity")
	}
	if ping(t, nsA, "192.168.80.3") {
		t.Fatal("VLAN 100 reached VLAN 200")
	}
	requireIdempotent(t, d, a, nsA, node)
	// The PVID changes in place.
	port := mustLink(t, node, hostName(c.UID, "net1")).Attrs().Index
	c.Interfaces = vlanPort(100, "192.168.80.3/24")
	apply(t, d, c)
	if got := mustLink(t, node, hostName(c.UID, "net1")).Attrs().Index; got != port {
		t.Fatal("the port was recreated for a VLAN change")
	}
	if !ping(t, nsA, "192.168.80.3") {
		t.Fatal("after moving C to VLAN 100: no connectivity")
	}
	requireIdempotent(t, d, c, node)
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
