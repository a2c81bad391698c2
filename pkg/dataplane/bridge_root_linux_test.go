package dataplane

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"podnet.io/podnet/pkg/nldump"
)

// twoBridgeNets is a pod with two bridge networks covering MTU, static MAC,
// IPv4 and IPv6 addresses and routes with and without a gateway.
func twoBridgeNets(t *testing.T, p Pod, host byte) Pod {
	mac, _ := net.ParseMAC(fmt.Sprintf("02:00:00:00:10:%02d", host))
	p.Interfaces = []Interface{
		{
			Name: "net1", Kind: KindBridge, Bridge: "pnbr-a", MTU: 9000, MAC: mac,
			Addresses: []net.IPNet{cidr(t, "192.168.10."+itoa(host)+"/24"), cidr(t, "fd00:10::"+itoa(host)+"/64")},
			Routes: []Route{
				{Dst: network(t, "10.50.0.0/16"), Gateway: net.ParseIP("192.168.10.254").To4()},
				{Dst: network(t, "fd00:50::/64"), Gateway: net.ParseIP("fd00:10::fe")},
				{Dst: network(t, "10.60.0.0/16")},
			},
		},
		{
			Name: "net2", Kind: KindBridge, Bridge: "pnbr-b",
			Addresses: []net.IPNet{cidr(t, "192.168.20."+itoa(host)+"/24")},
		},
	}
	return p
}

func itoa(b byte) string { return strconv.Itoa(int(b)) }

func TestRootBridgeAttachIsIdempotent(t *testing.T) {
	d, node := newNode(t)
	podNS, p := newPod(t)
	p = twoBridgeNets(t, p, 11)

	st := apply(t, d, p)
	if len(st) != 2 || st[0].Name != "net1" || st[1].Name != "net2" {
		t.Fatalf("statuses: %+v", st)
	}
	if st[0].MTU != 9000 || st[0].MAC != "02:00:00:00:10:11" || !slices.Equal(st[0].IPs, []string{"192.168.10.11/24", "fd00:10::11/64"}) {
		t.Fatalf("net1 status: %+v", st[0])
	}
	if st[1].MTU != 1500 || !slices.Equal(st[1].IPs, []string{"192.168.20.11/24"}) || st[1].MAC == "" {
		t.Fatalf("net2 status: %+v", st[1])
	}

	// Pod side: marked, up, the asked MTU and MAC.
	net1 := mustLink(t, podNS, "net1")
	if net1.Attrs().Alias != "podnet:net1" || net1.Attrs().Flags&net.FlagUp == 0 || net1.Type() != "veth" {
		t.Fatalf("net1 in pod: alias %q flags %v type %s", net1.Attrs().Alias, net1.Attrs().Flags, net1.Type())
	}
	routes, err := podnetRouteList(handle(t, podNS))
	if err != nil || len(routes) != 3 {
		t.Fatalf("podnet routes in pod: %v %v", routes, err)
	}

	// Node side: deterministic, marked port names in podnet's marked bridges.
	for _, ifc := range p.Interfaces {
		port := mustLink(t, node, hostName(p.UID, ifc.Name))
		if port.Attrs().Alias != "podnet:"+p.UID+":"+ifc.Name || port.Attrs().Flags&net.FlagUp == 0 {
			t.Fatalf("port of %s: alias %q flags %v", ifc.Name, port.Attrs().Alias, port.Attrs().Flags)
		}
		br := mustLink(t, node, ifc.Bridge)
		if br.Attrs().Alias != bridgeAlias || port.Attrs().MasterIndex != br.Attrs().Index || br.Attrs().Flags&net.FlagUp == 0 {
			t.Fatalf("bridge %s: alias %q, port master %d, bridge index %d", ifc.Bridge, br.Attrs().Alias, port.Attrs().MasterIndex, br.Attrs().Index)
		}
		if len(port.Attrs().Name) > 15 || !strings.HasPrefix(port.Attrs().Name, "pn") {
			t.Fatalf("port name %q", port.Attrs().Name)
		}
		// Bridge ports carry no IPv6 (no link-local, no per-port routes).
		if addrs, err := nldump.Addrs(handle(t, node), port, netlink.FAMILY_ALL); err != nil || len(addrs) != 0 {
			t.Fatalf("port of %s has addresses %v (%v)", ifc.Name, addrs, err)
		}
		// Nor does the bridge: pods must not reach the node through it.
		if addrs, err := nldump.Addrs(handle(t, node), br, netlink.FAMILY_ALL); err != nil || len(addrs) != 0 {
			t.Fatalf("bridge %s has addresses %v (%v)", ifc.Bridge, addrs, err)
		}
	}
	if mtu := mustLink(t, node, hostName(p.UID, "net1")).Attrs().MTU; mtu != 9000 {
		t.Fatalf("node end of net1: mtu %d, want 9000", mtu)
	}

	requireIdempotent(t, d, p, podNS, node)

	obs, err := d.Observe(context.Background(), p)
	if err != nil || len(obs) != 2 || obs[0].MAC != st[0].MAC || obs[1].MAC != st[1].MAC {
		t.Fatalf("observe: %+v %v, apply said %+v", obs, err, st)
	}
}

func TestRootBridgeConnectivity(t *testing.T) {
	d, node := newNode(t)
	nsA, a := newPod(t)
	nsB, b := newPod(t)
	a = twoBridgeNets(t, a, 1)
	b = twoBridgeNets(t, b, 2)
	apply(t, d, a)
	apply(t, d, b)
	// No wait: IPv6 addresses are usable at once (no DAD).
	for _, ip := range []string{"192.168.10.2", "fd00:10::2", "192.168.20.2"} {
		if !ping(t, nsA, ip) {
			t.Fatalf("pod A cannot reach pod B at %s\nnode:\n%s", ip, snapshot(t, node))
		}
	}
	if !ping(t, nsB, "fd00:10::1") {
		t.Fatal("pod B cannot reach pod A at fd00:10::1")
	}
	// Networks are separate bridges: pod C, only on pnbr-b, is not
	// reachable through pnbr-a even with an address in the same subnet.
	nsC, c := newPod(t)
	c.Interfaces = []Interface{{Name: "net2", Kind: KindBridge, Bridge: "pnbr-b", Addresses: []net.IPNet{cidr(t, "192.168.30.3/24"), cidr(t, "192.168.20.3/24")}}}
	apply(t, d, c)
	run(t, "ip", "-n", nsA, "addr", "add", "192.168.30.1/24", "dev", "net1")
	if ping(t, nsA, "192.168.30.3") {
		t.Fatal("pod A reached pod C across different bridge networks")
	}
	if !ping(t, nsC, "192.168.20.1") {
		t.Fatal("pod C cannot reach pod A on their shared bridge network")
	}
}

// TestRootFirstAttachSaysWhatAReadBackSays: a first attach that went as
// planned reports its interfaces from what it built, and an Apply that
// changed nothing from its plan's read, neither reading the pod back; that
// report must be the one Observe reads from the kernel: MTU (the kernel's
// default where none is asked), MAC (the kernel's where none is asked) and
// addresses in the order the interface lists them.
func TestRootFirstAttachSaysWhatAReadBackSays(t *testing.T) {
	d, _ := newNode(t)
	_, p := newPod(t)
	mac, _ := net.ParseMAC("02:00:00:00:aa:01")
	p.Interfaces = []Interface{
		{Name: "net1", Kind: KindBridge, Bridge: "pnbr-a", MTU: 9000,
			Addresses: []net.IPNet{cidr(t, "fd00:10::1/64"), cidr(t, "192.168.10.1/24"), cidr(t, "fd00:11::1/64")}},
		{Name: "net2", Kind: KindBridge, Bridge: "pnbr-b", MAC: mac, Addresses: []net.IPNet{cidr(t, "192.168.20.1/24")}},
	}
	built := apply(t, d, p)
	read, err := d.Observe(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(built, read) {
		t.Fatalf("first attach said %+v, a read back says %+v", built, read)
	}
	if built[1].MTU != 1500 || built[1].MAC != mac.String() || built[0].IPs[0] != "fd00:10::1/64" {
		t.Fatalf("first attach said %+v", built)
	}
	// An Apply with nothing to change reports from its plan's read.
	if again := apply(t, d, p); !reflect.DeepEqual(again, read) {
		t.Fatalf("an Apply that changed nothing said %+v, a read back says %+v", again, read)
	}
}

// TestRootBridgeDeletedAfterThePlanIsReadAgain: an attach planned while a
// bridge existed, which another pod's detach then deleted, joins the bridge
// made anew rather than the index its plan read.
func TestRootBridgeDeletedAfterThePlanIsReadAgain(t *testing.T) {
	d, node := newNode(t)
	_, a := newPod(t)
	a.Interfaces = []Interface{{Name: "net1", Kind: KindBridge, Bridge: "pnbr-a", Addresses: []net.IPNet{cidr(t, "192.168.10.1/24")}}}
	apply(t, d, a)
	old := mustLink(t, node, "pnbr-a").Attrs().Index

	_, b := newPod(t)
	b.Interfaces = []Interface{{Name: "net1", Kind: KindBridge, Bridge: "pnbr-a", Addresses: []net.IPNet{cidr(t, "192.168.10.2/24")}}}
	s, err := d.openSession(b.UID, b.NetNS)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	steps, _, err := s.plan(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Detach(context.Background(), a.UID, a.NetNS); err != nil {
		t.Fatal(err)
	}
	if l, err := linkByName(handle(t, node), "pnbr-a"); err != nil || l != nil {
		t.Fatalf("bridge after the last port left: %v %v", l, err)
	}
	s.want = map[string]Interface{"net1": b.Interfaces[0]}
	if failed, err := s.execute(context.Background(), steps); err != nil || len(failed) > 0 {
		t.Fatalf("attach planned before the bridge went: %v %v", failed, err)
	}
	br := mustLink(t, node, "pnbr-a")
	if port := mustLink(t, node, hostName(b.UID, "net1")); port.Attrs().MasterIndex != br.Attrs().Index || br.Attrs().Index == old {
		t.Fatalf("port master %d, bridge %d (was %d)", port.Attrs().MasterIndex, br.Attrs().Index, old)
	}
}

// TestRootKnownBridgeDeletedBySomeoneElse: a podnet bridge read once is
// not read again for the next pod (knownbridge.go); deleted behind
// podnet's back, the next pod's veth is refused by the kernel for its
// missing master, and that same Apply makes the bridge again and joins
// it.
func TestRootKnownBridgeDeletedBySomeoneElse(t *testing.T) {
	d, node := newNode(t)
	pod := func(host byte) Pod {
		_, p := newPod(t)
		p.Interfaces = []Interface{{Name: "net1", Kind: KindBridge, Bridge: "pnbr-k", Addresses: []net.IPNet{cidr(t, "192.168.30."+itoa(host)+"/24")}}}
		return p
	}
	apply(t, d, pod(1)) // creates the bridge
	apply(t, d, pod(2)) // reads it, and knows it from now on
	old, known := d.knownBridge("pnbr-k")
	if !known || old.Index != mustLink(t, node, "pnbr-k").Attrs().Index {
		t.Fatalf("bridge pnbr-k after two pods: known %v as %+v", known, old)
	}
	if err := handle(t, node).LinkDel(mustLink(t, node, "pnbr-k")); err != nil {
		t.Fatal(err)
	}
	p := pod(3)
	apply(t, d, p)
	br := mustLink(t, node, "pnbr-k")
	port := mustLink(t, node, hostName(p.UID, "net1"))
	if br.Attrs().Index == old.Index || br.Attrs().Alias != bridgeAlias || port.Attrs().MasterIndex != br.Attrs().Index {
		t.Fatalf("after the deletion: bridge index %d (was %d) alias %q, port master %d", br.Attrs().Index, old.Index, br.Attrs().Alias, port.Attrs().MasterIndex)
	}
	p4 := pod(4)
	apply(t, d, p4)
	if got := mustLink(t, node, hostName(p4.UID, "net1")).Attrs().MasterIndex; got != br.Attrs().Index {
		t.Fatalf("the next pod's port: master %d, want the new bridge's %d", got, br.Attrs().Index)
	}
}
