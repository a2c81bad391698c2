package dataplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"podnet.io/podnet/pkg/nldump"
)

func TestRootDetachLeavesNothing(t *testing.T) {
	d, node := newNode(t)
	parent := addParent(t, node, "eth1")
	podNS, p := newPod(t)
	p = twoBridgeNets(t, p, 3)
	p.Interfaces = append(p.Interfaces, Interface{Name: "net3", Kind: KindMacvlan, Master: parent, Addresses: []net.IPNet{cidr(t, "192.168.40.3/24")}})
	apply(t, d, p)
	nodeBefore := linkNames(t, node)
	if len(nodeBefore) != 6 { // eth1, its peer, two ports, two bridges
		t.Fatalf("node links after attach: %v", nodeBefore)
	}

	for _, name := range []string{"net1", "net2", "net3"} {
		if g := mustLink(t, podNS, name).Attrs().Group; g != podGroup {
			t.Fatalf("%s in group %d, want %d", name, g, podGroup)
		}
	}
	// Detach deletes podnet's group at once, and marked links that left
	// the group one by one.
	run(t, "ip", "-n", podNS, "link", "set", "net2", "group", "default")

	if err := d.Detach(context.Background(), p.UID, p.NetNS); err != nil {
		t.Fatal(err)
	}
	if got := linkNames(t, podNS); len(got) != 0 {
		t.Fatalf("pod links after detach: %v", got)
	}
	if got := linkNames(t, node); !slices.Equal(got, []string{"eth1", "eth1-peer"}) {
		t.Fatalf("node links after detach: %v", got)
	}
	routes, err := nldump.Retry(func() ([]netlink.Route, error) { return handle(t, podNS).RouteList(nil, 0) })
	if err != nil || len(routes) != 0 {
		t.Fatalf("pod routes after detach: %v %v", routes, err)
	}
	// Detaching again is fine.
	if err := d.Detach(context.Background(), p.UID, p.NetNS); err != nil {
		t.Fatalf("second detach: %v", err)
	}
}

func TestRootDetachWithoutNetNSCleansNodeByAlias(t *testing.T) {
	d, node := newNode(t)
	podNS, p := newPod(t)
	p = twoBridgeNets(t, p, 4)
	apply(t, d, p)
	otherNS, other := newPod(t)
	other.Interfaces = []Interface{{Name: "net1", Kind: KindBridge, Bridge: "pnbr-b"}}
	apply(t, d, other)

	// The agent learns of the deletion after the netns is gone ("" or a
	// stale path): only the marks on the node are left to go by.
	for _, path := range []string{"", "/run/netns/pntest-gone-" + randomHex(4)} {
		if err := d.Detach(context.Background(), p.UID, path); err != nil {
			t.Fatalf("detach with netns %q: %v", path, err)
		}
	}
	want := []string{hostName(other.UID, "net1"), "pnbr-b"}
	slices.Sort(want)
	if got := linkNames(t, node); !slices.Equal(got, want) {
		t.Fatalf("node links: %v, want %v (the other pod's port and bridge stay)", got, want)
	}
	if got := linkNames(t, podNS); len(got) != 0 {
		t.Fatalf("pod links after its node ends went: %v", got)
	}
	if got := linkNames(t, otherNS); !slices.Equal(got, []string{"net1"}) {
		t.Fatalf("the other pod lost links: %v", got)
	}
}

func TestRootCollectGarbage(t *testing.T) {
	d, node := newNode(t)
	_, a := newPod(t)
	_, b := newPod(t)
	a.Interfaces = []Interface{{Name: "net1", Kind: KindBridge, Bridge: "pnbr-a"}, {Name: "net2", Kind: KindBridge, Bridge: "pnbr-b"}}
	b.Interfaces = []Interface{{Name: "net1", Kind: KindBridge, Bridge: "pnbr-a"}}
	apply(t, d, a)
	apply(t, d, b)
	// Things podnet did not make, which garbage collection must not touch:
	// an empty bridge without podnet's mark, and a link named like a port.
	run(t, "ip", "-n", node, "link", "add", "admin-br", "type", "bridge")
	lookalike := hostName("someone-else", "net1")
	run(t, "ip", "-n", node, "link", "add", lookalike, "type", "veth", "peer", "name", "lookalike-peer")

	removed, err := d.CollectGarbage(context.Background(), func(uid string) bool { return uid == b.UID })
	if err != nil {
		t.Fatal(err)
	}
	wantRemoved := []string{hostName(a.UID, "net1"), hostName(a.UID, "net2"), "pnbr-b"}
	slices.Sort(removed)
	slices.Sort(wantRemoved)
	if !slices.Equal(removed, wantRemoved) {
		t.Fatalf("removed %v, want %v", removed, wantRemoved)
	}
	want := []string{hostName(b.UID, "net1"), "pnbr-a", "admin-br", lookalike, "lookalike-peer"}
	slices.Sort(want)
	if got := linkNames(t, node); !slices.Equal(got, want) {
		t.Fatalf("node links: %v, want %v", got, want)
	}

	removed, err = d.CollectGarbage(context.Background(), func(string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 {
		t.Fatalf("second collection removed %v, want b's port and pnbr-a", removed)
	}
	want = []string{"admin-br", lookalike, "lookalike-peer"}
	slices.Sort(want)
	if got := linkNames(t, node); !slices.Equal(got, want) {
		t.Fatalf("node links: %v, want %v", got, want)
	}
}

// addParent makes a NIC-like parent link on the node: a veth whose peer
// stays on the node too (this kernel has no dummy links).
func addParent(t *testing.T, node, name string) string {
	t.Helper()
	run(t, "ip", "-n", node, "link", "add", name, "type", "veth", "peer", "name", name+"-peer")
	run(t, "ip", "-n", node, "link", "set", name, "up")
	run(t, "ip", "-n", node, "link", "set", name+"-peer", "up")
	return name
}

func TestRootSharedBridgeGoesWithItsLastPort(t *testing.T) {
	d, node := newNode(t)
	_, a := newPod(t)
	_, b := newPod(t)
	for _, p := range []*Pod{&a, &b} {
		p.Interfaces = []Interface{{Name: "net1", Kind: KindBridge, Bridge: "pnbr-s"}}
		apply(t, d, *p)
	}
	if err := d.Detach(context.Background(), a.UID, a.NetNS); err != nil {
		t.Fatal(err)
	}
	want := []string{hostName(b.UID, "net1"), "pnbr-s"}
	slices.Sort(want)
	if got := linkNames(t, node); !slices.Equal(got, want) {
		t.Fatalf("after the first pod left: %v, want %v", got, want)
	}
	if err := d.Detach(context.Background(), b.UID, b.NetNS); err != nil {
		t.Fatal(err)
	}
	if got := linkNames(t, node); len(got) != 0 {
		t.Fatalf("after the last pod left: %v", got)
	}
}

// TestRootConcurrentPods attaches and detaches pods from several goroutines
// on shared bridges, as the agent does: bridges are created once, never
// deleted under a joining pod, and gone at the end.
func TestRootConcurrentPods(t *testing.T) {
	d, node := newNode(t)
	const workers, rounds = 6, 5
	pods := make([][]Pod, workers)
	for w := range workers {
		for i := range rounds {
			_, p := newPod(t)
			p.Interfaces = []Interface{
				{Name: "net1", Kind: KindBridge, Bridge: "pnbr-c1", Addresses: []net.IPNet{cidr(t, fmt.Sprintf("10.7.%d.%d/16", w, i+1))}},
				{Name: "net2", Kind: KindBridge, Bridge: "pnbr-c2"},
			}
			pods[w] = append(pods[w], p)
		}
	}
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			ctx := context.Background()
			for _, p := range pods[w] {
				st, err := d.Apply(ctx, p)
				if err == nil && len(st) != 2 {
					err = fmt.Errorf("pod %s: %d statuses", p.UID, len(st))
				}
				if err == nil {
					err = d.Detach(ctx, p.UID, p.NetNS)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := linkNames(t, node); len(got) != 0 {
		t.Fatalf("node links after every pod left: %v", got)
	}
}

func TestRootDumpLinksFilters(t *testing.T) {
	_, node := newNode(t)
	run(t, "ip", "-n", node, "link", "add", "br0", "type", "bridge")
	run(t, "ip", "-n", node, "link", "add", "va", "type", "veth", "peer", "name", "vb")
	run(t, "ip", "-n", node, "link", "set", "va", "master", "br0", "alias", "podnet:u:net1")
	ns, err := netns.GetFromName(node)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	names := func(kind string, master int) []string {
		links, err := dumpLinks(ns, kind, master)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range links {
			out = append(out, l.name+"/"+l.kind+"/"+l.alias)
		}
		slices.Sort(out)
		return out
	}
	if got := names("bridge", 0); !slices.Equal(got, []string{"br0/bridge/"}) {
		t.Fatalf("bridges: %v", got)
	}
	if got := names("veth", 0); !slices.Equal(got, []string{"va/veth/podnet:u:net1", "vb/veth/"}) {
		t.Fatalf("veths: %v", got)
	}
	if got := names("", mustLink(t, node, "br0").Attrs().Index); !slices.Equal(got, []string{"va/veth/podnet:u:net1"}) {
		t.Fatalf("ports of br0: %v", got)
	}
}

func TestRootApplyToMissingNetNS(t *testing.T) {
	d, _ := newNode(t)
	p := Pod{UID: "u1", NetNS: "/run/netns/pntest-gone-" + randomHex(4), Interfaces: []Interface{{Name: "net1", Kind: KindBridge, Bridge: "b"}}}
	_, err := d.Apply(context.Background(), p)
	if !errors.Is(err, ErrNetNSGone) {
		t.Fatalf("want ErrNetNSGone, got %v", err)
	}
	requireMentions(t, err, p.NetNS, `"u1"`)
}

// TestRootBridgeWithCarrierGoesWithItsLastPort removes the last port of a
// bridge that has carrier: the kernel clears a bridge's carrier (and so its
// IFF_RUNNING) lazily, up to a second after its last port left, so "in use"
// must be decided by the bridge's ports, not by its flags.
func TestRootBridgeWithCarrierGoesWithItsLastPort(t *testing.T) {
	d, node := newNode(t)
	_, p := newPod(t)
	p.Interfaces = []Interface{{Name: "net1", Kind: KindBridge, Bridge: "pnbr-r"}}
	for _, via := range []string{"detach", "collect", "remove"} {
		apply(t, d, p)
		eventually(t, "pnbr-r to have carrier", func() bool {
			return mustLink(t, node, "pnbr-r").Attrs().Flags&net.FlagRunning != 0
		})
		var err error
		switch via {
		case "detach":
			err = d.Detach(context.Background(), p.UID, p.NetNS)
		case "collect":
			run(t, "ip", "-n", node, "link", "del", hostName(p.UID, "net1"))
			_, err = d.CollectGarbage(context.Background(), func(string) bool { return true })
		case "remove":
			q := p
			q.Interfaces = nil
			_, err = d.Apply(context.Background(), q)
		}
		if err != nil {
			t.Fatalf("%s: %v", via, err)
		}
		if got := linkNames(t, node); len(got) != 0 {
			t.Fatalf("node links right after the last port left (%s): %v", via, got)
		}
	}
}
