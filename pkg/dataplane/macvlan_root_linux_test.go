package dataplane

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

func TestRootMacvlan(t *testing.T) {
	d, node := newNode(t)
	parent := addParent(t, node, "eth1")
	run(t, "ip", "-n", node, "link", "set", parent, "mtu", "9000")
	parentBefore := snapshot(t, node)
	nsA, a := newPod(t)
	nsB, b := newPod(t)
	macvlan := func(host string) []Interface {
		return []Interface{{Name: "net1", Kind: KindMacvlan, Master: parent,
			Addresses: []net.IPNet{cidr(t, "192.168.40."+host+"/24"), cidr(t, "fd00:40::"+host+"/64")}}}
	}
	a.Interfaces = macvlan("1")
	b.Interfaces = macvlan("2")
	st := apply(t, d, a)
	apply(t, d, b)
	if len(st) != 1 || st[0].MTU != 9000 {
		t.Fatalf("macvlan without MTU takes the parent's (9000): %+v", st)
	}
	l := mustLink(t, nsA, "net1")
	mv, ok := l.(*netlink.Macvlan)
	if !ok || mv.Mode != netlink.MACVLAN_MODE_BRIDGE || l.Attrs().Alias != "podnet:net1" {
		t.Fatalf("net1 in pod A: %T %+v", l, l.Attrs())
	}
	// Created in the pod, so the node gained nothing.
	if got := snapshot(t, node); got != parentBefore {
		t.Fatalf("the node changed:\nbefore:\n%s\nafter:\n%s", parentBefore, got)
	}
	for _, ip := range []string{"192.168.40.2", "fd00:40::2"} {
		if !ping(t, nsA, ip) {
			t.Fatalf("macvlan bridge mode: pod A cannot reach %s", ip)
		}
	}
	requireIdempotent(t, d, a, nsA, node)

	// Mode and MTU change in place; private mode cuts pod-to-pod traffic.
	index := l.Attrs().Index
	a.Interfaces[0].Mode = "private"
	a.Interfaces[0].MTU = 1500
	b.Interfaces[0].Mode = "private"
	apply(t, d, a)
	apply(t, d, b)
	l = mustLink(t, nsA, "net1")
	if l.Attrs().Index != index || l.(*netlink.Macvlan).Mode != netlink.MACVLAN_MODE_PRIVATE || l.Attrs().MTU != 1500 {
		t.Fatalf("after mode change: index %d (was %d), mode %v, mtu %d", l.Attrs().Index, index, l.(*netlink.Macvlan).Mode, l.Attrs().MTU)
	}
	if ping(t, nsA, "192.168.40.2") {
		t.Fatal("macvlan private mode: pods still reach each other")
	}
	requireIdempotent(t, d, a, nsA, node)

	if err := d.Detach(context.Background(), b.UID, b.NetNS); err != nil {
		t.Fatal(err)
	}
	if got := linkNames(t, nsB); len(got) != 0 {
		t.Fatalf("pod B after detach: %v", got)
	}
	if got := snapshot(t, node); got != parentBefore {
		t.Fatalf("the parent or node changed:\nbefore:\n%s\nafter:\n%s", parentBefore, got)
	}

	// An MTU above the parent's is refused by name.
	a.Interfaces[0].MTU = 9001
	if _, err := d.Apply(context.Background(), a); err == nil || !strings.Contains(err.Error(), `"net1"`) || !strings.Contains(err.Error(), "9001") {
		t.Fatalf("mtu above the parent's: %v", err)
	}
}

func TestRootForeignLinksAreNotTouched(t *testing.T) {
	d, node := newNode(t)
	podNS, p := newPod(t)
	// The pod's CNI eth0, and a link somebody else put into the pod.
	run(t, "ip", "-n", podNS, "link", "add", "eth0", "type", "veth", "peer", "name", "other0")
	run(t, "ip", "-n", podNS, "link", "add", "net9", "type", "veth", "peer", "name", "other9")
	// A bridge the admin made: podnet uses it, never changes or deletes it.
	run(t, "ip", "-n", node, "link", "add", "admin-br", "type", "bridge")
	run(t, "ip", "-n", node, "link", "set", "admin-br", "mtu", "1400")

	p.PrimaryMTU = 1450
	p.Interfaces = []Interface{
		{Name: "net1", Kind: KindBridge, Bridge: "admin-br", MTU: 1400},
		{Name: "net9", Kind: KindBridge, Bridge: "pnbr-a"},
	}
	_, err := d.Apply(context.Background(), p)
	if err == nil || !strings.Contains(err.Error(), `interface "net9"`) || !strings.Contains(err.Error(), "not podnet's") || !strings.Contains(err.Error(), p.NetNS) {
		t.Fatalf("want an error naming net9, why, and the netns; got %v", err)
	}
	if mtu := mustLink(t, podNS, "eth0").Attrs().MTU; mtu != 1450 {
		t.Fatalf("eth0 mtu %d, want 1450", mtu)
	}
	if alias := mustLink(t, podNS, "net9").Attrs().Alias; alias != "" {
		t.Fatalf("foreign net9 got alias %q", alias)
	}
	if got := mustLink(t, podNS, "net1").Attrs().MasterIndex; got != 0 {
		t.Fatalf("net1 master %d", got)
	}
	if mustLink(t, node, hostName(p.UID, "net1")).Attrs().MasterIndex != mustLink(t, node, "admin-br").Attrs().Index {
		t.Fatal("net1 is not a port of admin-br")
	}
	if slices.Contains(linkNames(t, node), "pnbr-a") {
		t.Fatal("a bridge was made for the refused interface")
	}

	// Removing the last port of the admin's bridge leaves the bridge.
	p.Interfaces = nil
	apply(t, d, p)
	br := mustLink(t, node, "admin-br")
	if br.Attrs().Alias != "" || br.Attrs().MTU != 1400 {
		t.Fatalf("admin-br changed: %+v", br.Attrs())
	}
	if got := linkNames(t, podNS); !slices.Equal(got, []string{"eth0", "net9", "other0", "other9"}) {
		t.Fatalf("pod links: %v", got)
	}
	requireIdempotent(t, d, p, podNS, node)
}

func TestRootFailedInterfaceIsRolledBack(t *testing.T) {
	d, node := newNode(t)
	podNS, p := newPod(t)
	p.Interfaces = []Interface{
		// The gateway is on no subnet of the interface: the route fails
		// after the link, its port and its bridge were made.
		{Name: "net1", Kind: KindBridge, Bridge: "pnbr-x", Addresses: []net.IPNet{cidr(t, "192.168.50.1/24")},
			Routes: []Route{{Dst: network(t, "10.70.0.0/16"), Gateway: net.ParseIP("172.31.0.1")}}},
		{Name: "net2", Kind: KindBridge, Bridge: "pnbr-y", Addresses: []net.IPNet{cidr(t, "192.168.51.1/24")}},
		// Invalid: never started.
		{Name: "net3", Kind: KindBridge, Bridge: "pnbr-z", MTU: 70000},
	}
	st, err := d.Apply(context.Background(), p)
	if err == nil {
		t.Fatal("want an error")
	}
	requireMentions(t, err, `interface "net1"`, "add-route", `interface "net3"`, "mtu 70000", "65535", p.NetNS)
	if len(st) != 1 || st[0].Name != "net2" {
		t.Fatalf("statuses: %+v, want only net2", st)
	}
	if got := linkNames(t, podNS); !slices.Equal(got, []string{"net2"}) {
		t.Fatalf("pod links: %v, want only net2", got)
	}
	want := []string{hostName(p.UID, "net2"), "pnbr-y"}
	slices.Sort(want)
	if got := linkNames(t, node); !slices.Equal(got, want) {
		t.Fatalf("node links: %v, want %v", got, want)
	}
}

// TestRootIPv6ReachableWhenApplyReturns pings a new pod's IPv6 address once,
// right after Apply, several times over: Apply returns only once the kernel
// listens for neighbour solicitations of the address, so the first ping
// needs no retry.
func TestRootIPv6ReachableWhenApplyReturns(t *testing.T) {
	d, node := newNode(t)
	parent := addParent(t, node, "eth1")
	for i := range 8 {
		nsA, a := newPod(t)
		_, b := newPod(t)
		a.Interfaces = []Interface{{Name: "net1", Kind: KindMacvlan, Master: parent, Addresses: []net.IPNet{cidr(t, "fd00:41::1/64")}}}
		b.Interfaces = []Interface{{Name: "net1", Kind: KindMacvlan, Master: parent, Addresses: []net.IPNet{cidr(t, "fd00:41::2/64")}}}
		apply(t, d, a)
		apply(t, d, b)
		if !pingOnce(t, nsA, "fd00:41::2") {
			t.Fatalf("round %d: first ping to a just-applied IPv6 address failed", i)
		}
		for _, p := range []Pod{a, b} {
			if err := d.Detach(context.Background(), p.UID, p.NetNS); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRootMacvlanVEPA puts two pods on vepa macvlans of one NIC: they reach
// the host across the wire, and not each other, since vepa sends pod to pod
// traffic out to the wire and this wire does not send it back.
func TestRootMacvlanVEPA(t *testing.T) {
	requireKernel(t, "macvlan")
	d, _, parent := wiredNode(t, 42)
	nsA, a := newPod(t)
	_, b := newPod(t)
	a.Interfaces = onParent(t, KindMacvlan, parent, "vepa", 42, 1)
	b.Interfaces = onParent(t, KindMacvlan, parent, "vepa", 42, 2)
	apply(t, d, a)
	apply(t, d, b)
	requireMode(t, mustLink(t, nsA, "net1"), "vepa")
	requirePings(t, "macvlan vepa to the wire", nsA, "192.168.42.254", "fd00:42::fe")
	requireNoPing(t, "macvlan vepa without a hairpin switch", nsA, "192.168.42.2")
	// The same pods in bridge mode, changed in place, reach each other.
	a.Interfaces[0].Mode, b.Interfaces[0].Mode = "bridge", "bridge"
	index := mustLink(t, nsA, "net1").Attrs().Index
	apply(t, d, a)
	apply(t, d, b)
	if mustLink(t, nsA, "net1").Attrs().Index != index {
		t.Fatal("vepa to bridge recreated the macvlan")
	}
	requirePings(t, "macvlan bridge", nsA, "192.168.42.2")
	detachAll(t, d, a, b)
}

// TestRootMacvlanPassthru gives one pod the NIC through a passthru macvlan:
// it reaches the host across the wire; a second passthru macvlan on the same
// NIC is refused by name; and a change to bridge mode recreates the link.
func TestRootMacvlanPassthru(t *testing.T) {
	requireKernel(t, "macvlan")
	d, node, parent := wiredNode(t, 43)
	nodeBefore := snapshot(t, node)
	nsA, a := newPod(t)
	nsB, b := newPod(t)
	a.Interfaces = onParent(t, KindMacvlan, parent, "passthru", 43, 1)
	b.Interfaces = onParent(t, KindMacvlan, parent, "passthru", 43, 2)
	apply(t, d, a)
	requireMode(t, mustLink(t, nsA, "net1"), "passthru")
	requirePings(t, "macvlan passthru", nsA, "192.168.43.254", "fd00:43::fe")
	requireIdempotent(t, d, a, nsA)
	_, err := d.Apply(context.Background(), b)
	requireMentions(t, err, `interface "net1"`, b.NetNS)
	if got := linkNames(t, nsB); len(got) != 0 {
		t.Fatalf("pod B after its refused passthru: %v", got)
	}

	index := mustLink(t, nsA, "net1").Attrs().Index
	a.Interfaces[0].Mode = "bridge"
	apply(t, d, a)
	if mustLink(t, nsA, "net1").Attrs().Index == index {
		t.Fatal("passthru to bridge changed the macvlan in place; the kernel cannot")
	}
	requireMode(t, mustLink(t, nsA, "net1"), "bridge")
	requirePings(t, "macvlan bridge after passthru", nsA, "192.168.43.254")
	detachAll(t, d, a)
	if got := snapshot(t, node); got != nodeBefore {
		t.Fatalf("the node changed:\nbefore:\n%s\nafter:\n%s", nodeBefore, got)
	}
}
