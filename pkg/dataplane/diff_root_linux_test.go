package dataplane

import (
	"context"
	"net"
	"slices"
	"testing"
)

// stepOps lists "op interface" of each step, for assertions on the plan.
func stepOps(steps []Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, string(s.Op)+" "+s.Interface)
	}
	return out
}

func TestRootChangedPodIsAppliedInPlace(t *testing.T) {
	d, node := newNode(t)
	podNS, p := newPod(t)
	p = twoBridgeNets(t, p, 5)
	apply(t, d, p)
	net1Index := mustLink(t, podNS, "net1").Attrs().Index
	net2Index := mustLink(t, podNS, "net2").Attrs().Index

	newMAC, _ := net.ParseMAC("02:00:00:00:99:05")
	q := p
	q.Interfaces = slices.Clone(p.Interfaces)
	q.Interfaces[0].MTU = 1400
	q.Interfaces[0].MAC = newMAC
	q.Interfaces[0].Addresses = []net.IPNet{cidr(t, "192.168.10.5/24"), cidr(t, "192.168.11.5/24")}
	q.Interfaces[0].Routes = []Route{{Dst: network(t, "10.50.0.0/16"), Gateway: net.ParseIP("192.168.11.254")}}
	q.Interfaces[1].Bridge = "pnbr-c"
	q.Interfaces = append(q.Interfaces, Interface{Name: "net3", Kind: KindBridge, Bridge: "pnbr-a", Addresses: []net.IPNet{cidr(t, "fd00:30::5/64")}})

	steps, err := d.Plan(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if (s.Op == OpDelete || s.Op == OpCreate) && s.Interface != "net3" {
			t.Fatalf("in-place change planned as %s: %v", s, stepOps(steps))
		}
	}
	st := apply(t, d, q)
	if got := mustLink(t, podNS, "net1").Attrs().Index; got != net1Index {
		t.Fatalf("net1 was recreated: index %d, was %d", got, net1Index)
	}
	if got := mustLink(t, podNS, "net2").Attrs().Index; got != net2Index {
		t.Fatalf("net2 was recreated: index %d, was %d", got, net2Index)
	}
	if len(st) != 3 || st[0].MTU != 1400 || st[0].MAC != "02:00:00:00:99:05" || !slices.Equal(st[0].IPs, []string{"192.168.10.5/24", "192.168.11.5/24"}) {
		t.Fatalf("statuses after change: %+v", st)
	}
	if mtu := mustLink(t, node, hostName(p.UID, "net1")).Attrs().MTU; mtu != 1400 {
		t.Fatalf("node end of net1: mtu %d, want 1400", mtu)
	}
	if got := linkNames(t, node); slices.Contains(got, "pnbr-b") || !slices.Contains(got, "pnbr-c") {
		t.Fatalf("after moving net2 to pnbr-c the node has %v; want pnbr-b gone and pnbr-c present", got)
	}
	requireIdempotent(t, d, q, podNS, node)

	// Removing a network takes its pod link, node end and empty bridge.
	r := q
	r.Interfaces = []Interface{q.Interfaces[0], q.Interfaces[2]}
	apply(t, d, r)
	if got := linkNames(t, podNS); !slices.Equal(got, []string{"net1", "net3"}) {
		t.Fatalf("pod links after removing net2: %v", got)
	}
	want := []string{hostName(p.UID, "net1"), hostName(p.UID, "net3"), "pnbr-a"}
	slices.Sort(want)
	if got := linkNames(t, node); !slices.Equal(got, want) {
		t.Fatalf("node links after removing net2: %v, want %v", got, want)
	}
	requireIdempotent(t, d, r, podNS, node)
}

func TestRootDriftIsRepaired(t *testing.T) {
	d, node := newNode(t)
	podNS, p := newPod(t)
	p = twoBridgeNets(t, p, 7)
	want := apply(t, d, p)
	port1 := hostName(p.UID, "net1")

	// Undo things by hand, as an admin or a bug would.
	run(t, "ip", "-n", podNS, "link", "del", "net2")
	run(t, "ip", "-n", podNS, "addr", "del", "fd00:10::7/64", "dev", "net1")
	run(t, "ip", "-n", podNS, "addr", "add", "192.168.99.7/24", "dev", "net1", "label", "net1")
	run(t, "ip", "-n", podNS, "link", "set", "net1", "mtu", "1300")
	run(t, "ip", "-n", podNS, "route", "del", "10.60.0.0/16")
	run(t, "ip", "-n", node, "link", "set", port1, "nomaster")
	run(t, "ip", "-n", node, "link", "set", port1, "down", "mtu", "1280")
	run(t, "ip", "-n", node, "link", "del", "pnbr-b")

	steps, err := d.Plan(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) == 0 {
		t.Fatal("plan found no drift")
	}
	got := apply(t, d, p)
	if len(got) != 2 || got[0].MTU != want[0].MTU || got[0].MAC != want[0].MAC || !slices.Equal(got[0].IPs, want[0].IPs) ||
		got[1].MTU != want[1].MTU || !slices.Equal(got[1].IPs, want[1].IPs) {
		t.Fatalf("after repair: %+v, want %+v", got, want)
	}
	if port := mustLink(t, node, port1).Attrs(); port.MasterIndex != mustLink(t, node, "pnbr-a").Attrs().Index || port.MTU != 9000 || port.Flags&net.FlagUp == 0 {
		t.Fatalf("net1's node end is not back in pnbr-a, up, with mtu 9000: %+v", port)
	}
	requireIdempotent(t, d, p, podNS, node)

	// The repaired networks carry traffic.
	peerNS, peer := newPod(t)
	peer = twoBridgeNets(t, peer, 8)
	apply(t, d, peer)
	for _, ip := range []string{"192.168.10.7", "fd00:10::7", "192.168.20.7"} {
		if !ping(t, peerNS, ip) {
			t.Fatalf("peer cannot reach repaired pod at %s", ip)
		}
	}
}
