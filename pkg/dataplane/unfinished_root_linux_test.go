package dataplane

import (
	"context"
	"net"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// halfVeth builds by hand what create leaves when the agent is killed
// after making the veth: the pod end named ifname in the pod, the node end
// named nodeEnd on the node, marked with nodeAlias ("" = not yet) and the
// pod end with podAlias.
func halfVeth(t *testing.T, node, pod, nodeEnd, ifname, nodeAlias, podAlias string) {
	t.Helper()
	podNS, err := netns.GetFromName(pod)
	if err != nil {
		t.Fatal(err)
	}
	defer podNS.Close()
	attrs := netlink.NewLinkAttrs()
	attrs.Name = nodeEnd
	h := handle(t, node)
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: ifname, PeerNamespace: netlink.NsFd(int(podNS))}); err != nil {
		t.Fatalf("make the half-built veth: %v", err)
	}
	if nodeAlias != "" {
		if err := h.LinkSetAlias(mustLink(t, node, nodeEnd), nodeAlias); err != nil {
			t.Fatal(err)
		}
	}
	if podAlias != "" {
		if err := handle(t, pod).LinkSetAlias(mustLink(t, pod, ifname), podAlias); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRootUnfinishedVethIsMadeAnew: whichever step of create the agent was
// killed after, the next apply deletes the half-built veth and completes
// the interface: up, addressed, marked and in podnet's group.
func TestRootUnfinishedVethIsMadeAnew(t *testing.T) {
	for name, c := range map[string]struct{ nodeMarked, podMarked bool }{
		"veth made, nothing marked":       {},
		"node end marked":                 {nodeMarked: true},
		"pod end marked, not yet grouped": {nodeMarked: true, podMarked: true},
	} {
		t.Run(name, func(t *testing.T) {
			d, node := newNode(t)
			podNS, p := newPod(t)
			p.Interfaces = []Interface{{Name: "net1", Kind: KindBridge, Bridge: "pnbr-u", Addresses: []net.IPNet{cidr(t, "192.168.40.2/24")}}}
			nodeAlias, podAliasV := "", ""
			if c.nodeMarked {
				nodeAlias = portAlias(p.UID, "net1")
			}
			if c.podMarked {
				podAliasV = podAlias("net1")
			}
			halfVeth(t, node, podNS, hostName(p.UID, "net1"), "net1", nodeAlias, podAliasV)
			old := mustLink(t, podNS, "net1").Attrs().Index

			st := apply(t, d, p)
			if len(st) != 1 || len(st[0].IPs) != 1 || st[0].IPs[0] != "192.168.40.2/24" {
				t.Fatalf("statuses: %+v", st)
			}
			l := mustLink(t, podNS, "net1")
			a := l.Attrs()
			if a.Index == old || a.Alias != podAlias("net1") || a.Group != podGroup || a.Flags&net.FlagUp == 0 {
				t.Fatalf("net1 after apply: index %d (half-built %d), alias %q, group %#x, flags %v; want a new, marked, grouped, up link", a.Index, old, a.Alias, a.Group, a.Flags)
			}
			if got := mustLink(t, node, hostName(p.UID, "net1")).Attrs(); got.Alias != portAlias(p.UID, "net1") || got.MasterIndex == 0 {
				t.Fatalf("node end after apply: alias %q master %d", got.Alias, got.MasterIndex)
			}
			requireIdempotent(t, d, p, podNS, node)
		})
	}
}

// TestRootForeignNet1IsNeverTakenOver: a link named net1 that podnet did
// not make for this pod is refused and left as it is, whatever its kind,
// its peer or its node end's mark.
func TestRootForeignNet1IsNeverTakenOver(t *testing.T) {
	cases := map[string]func(t *testing.T, node, pod, uid string){
		"a bridge": func(t *testing.T, _, pod, _ string) {
			attrs := netlink.NewLinkAttrs()
			attrs.Name = "net1"
			if err := handle(t, pod).LinkAdd(&netlink.Bridge{LinkAttrs: attrs}); err != nil {
				t.Fatal(err)
			}
		},
		"a veth pair inside the pod": func(t *testing.T, _, pod, _ string) {
			attrs := netlink.NewLinkAttrs()
			attrs.Name = "net1"
			if err := handle(t, pod).LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "peer1"}); err != nil {
				t.Fatal(err)
			}
		},
		"a veth to a node link of another name": func(t *testing.T, node, pod, _ string) {
			halfVeth(t, node, pod, "pnforeign0", "net1", "", "")
		},
		"a veth to another pod's node end": func(t *testing.T, node, pod, _ string) {
			halfVeth(t, node, pod, hostName("uid-other", "net1"), "net1", portAlias("uid-other", "net1"), "")
		},
		"a veth to this pod's node end marked for another interface": func(t *testing.T, node, pod, uid string) {
			halfVeth(t, node, pod, hostName(uid, "net1"), "net1", portAlias(uid, "net2"), "")
		},
		"this pod's node end paired into another netns": func(t *testing.T, node, pod, uid string) {
			// An earlier sandbox of the pod still holds the node end; the
			// new one has a net1 of the same index with its peer outside
			// the node.
			oldSandbox, _ := newNetNS(t, "old")
			halfVeth(t, node, oldSandbox, hostName(uid, "net1"), "net1", portAlias(uid, "net1"), "")
			other, _ := newNetNS(t, "other")
			halfVeth(t, other, pod, "pnother0", "net1", "", "")
			if a, b := mustLink(t, oldSandbox, "net1").Attrs(), mustLink(t, pod, "net1").Attrs(); a.Index != b.Index || a.ParentIndex != b.ParentIndex {
				t.Fatalf("the two net1 got indexes %d/%d and peers %d/%d; the case needs them alike", a.Index, b.Index, a.ParentIndex, b.ParentIndex)
			}
		},
		"a veth to this pod's node end, the pod end with another alias": func(t *testing.T, node, pod, uid string) {
			halfVeth(t, node, pod, hostName(uid, "net1"), "net1", portAlias(uid, "net1"), "mine")
		},
	}
	for name, build := range cases {
		t.Run(name, func(t *testing.T) {
			d, node := newNode(t)
			podNS, p := newPod(t)
			p.Interfaces = []Interface{{Name: "net1", Kind: KindBridge, Bridge: "pnbr-f"}}
			build(t, node, podNS, p.UID)
			before := snapshot(t, podNS)
			_, err := d.Apply(context.Background(), p)
			requireMentions(t, err, `"net1"`, "not podnet's")
			if after := snapshot(t, podNS); after != before {
				t.Fatalf("the pod's net1 was changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestRootNodeEndOfAnEarlierSandbox: the node end of this pod interface,
// still paired into an earlier sandbox's netns that is being torn down,
// holds the name the new node end needs. Marked as this pod interface's,
// it is deleted and the interface made; marked otherwise or not at all,
// it is left alone and the interface refused by name.
func TestRootNodeEndOfAnEarlierSandbox(t *testing.T) {
	for name, c := range map[string]struct {
		alias   func(uid string) string
		replace bool
	}{
		"marked as this interface's": {alias: func(uid string) string { return portAlias(uid, "net1") }, replace: true},
		"marked as another pod's":    {alias: func(string) string { return portAlias("uid-other", "net1") }},
		"not marked":                 {alias: func(string) string { return "" }},
	} {
		t.Run(name, func(t *testing.T) {
			d, node := newNode(t)
			podNS, p := newPod(t)
			p.Interfaces = []Interface{{Name: "net1", Kind: KindBridge, Bridge: "pnbr-e", Addresses: []net.IPNet{cidr(t, "192.168.41.2/24")}}}
			oldSandbox, _ := newNetNS(t, "old")
			halfVeth(t, node, oldSandbox, hostName(p.UID, "net1"), "net1", c.alias(p.UID), podAlias("net1"))
			_, err := d.Apply(context.Background(), p)
			if !c.replace {
				requireMentions(t, err, `"net1"`, hostName(p.UID, "net1"))
				mustLink(t, oldSandbox, "net1")
				return
			}
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if l, err := linkByName(handle(t, oldSandbox), "net1"); err != nil || l != nil {
				t.Fatalf("the earlier sandbox's net1 is still there (%v): its node end was not deleted", err)
			}
			port := mustLink(t, node, hostName(p.UID, "net1")).Attrs()
			if port.Alias != portAlias(p.UID, "net1") || port.MasterIndex != mustLink(t, node, "pnbr-e").Attrs().Index || port.Flags&net.FlagUp == 0 {
				t.Fatalf("new node end: alias %q, master %d, flags %v", port.Alias, port.MasterIndex, port.Flags)
			}
			requireIdempotent(t, d, p, podNS, node)
		})
	}
}
