package localcluster

import (
	"crypto/rand"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"podnet.io/podnet/pkg/nldump"
)

// TestRootDataLink creates the data NICs of a two-node layout in two
// throwaway netns, twice (a second Up must be fine), checks they are up,
// joined and without any address, then removes them as Down does, twice.
func TestRootDataLink(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("needs root: creates network namespaces")
	}
	suffix := strings.ToLower(rand.Text()[:6])
	l := planLayout("dt"+suffix, 42, 2)
	for _, n := range l.Nodes {
		n := n
		if err := ensureNetNS(n.NetNS); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := deleteNetNS(n.NetNS); err != nil {
				t.Error(err)
			}
		})
	}
	a, b := l.Nodes[0], l.Nodes[1]
	for range 2 {
		if err := ensureDataLink(a, b); err != nil {
			t.Fatal(err)
		}
	}
	var indexes []int
	for _, n := range l.Nodes {
		h, err := handleAt(n.NetNS)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		link, err := h.LinkByName(DataNIC)
		if err != nil {
			t.Fatalf("no data NIC in %s: %v", n.NetNS, err)
		}
		if link.Type() != "veth" || link.Attrs().Flags&net.FlagUp == 0 {
			t.Errorf("data NIC in %s: type %s flags %v, want an up veth", n.NetNS, link.Type(), link.Attrs().Flags)
		}
		addrs, err := nldump.Addrs(h, link, netlink.FAMILY_ALL)
		if err != nil {
			t.Fatal(err)
		}
		if len(addrs) > 0 {
			t.Errorf("data NIC in %s carries addresses %v, want none", n.NetNS, addrs)
		}
		// IFLA_LINK of a veth is its peer's index.
		indexes = append(indexes, link.Attrs().Index, link.Attrs().ParentIndex)
	}
	if indexes[1] != indexes[2] || indexes[3] != indexes[0] {
		t.Errorf("the data NICs are not each other's peer: index/peer %v", indexes)
	}
	for range 2 {
		if err := removeDataLink(a); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range l.Nodes {
		h, err := handleAt(n.NetNS)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		if link, err := h.LinkByName(DataNIC); err == nil {
			t.Errorf("data NIC %s left in %s after removal", link.Attrs().Name, n.NetNS)
		}
	}
}
