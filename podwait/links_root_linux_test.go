package podwait

import (
	"net"
	"os"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"

	"podnet.io/podnet/pkg/nldump"
)

// TestRootListLinksMatchesNetlink dumps the links of a throwaway namespace
// with the raw RTM_GETLINK request and compares the names and up flags
// with what the netlink library reports for the same namespace: lo (down
// in a new namespace), and a veth pair of which one end is up.
func TestRootListLinksMatchesNetlink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("TestRootListLinksMatchesNetlink creates network namespaces: run it as root")
	}
	path := throwawayNetNS(t)
	h, err := netlink.NewHandleAt(mustNS(t, path))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	v := veth("net1")
	if err := h.LinkAdd(v); err != nil {
		t.Fatalf("add net1: %v", err)
	}
	if err := h.LinkSetUp(v); err != nil {
		t.Fatalf("up net1: %v", err)
	}
	want, err := nldump.Links(h)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]Link
	if err := ns.WithNetNSPath(path, func(ns.NetNS) error {
		got, err = listLinks(make([]byte, recvBufferSize))
		return err
	}); err != nil {
		t.Fatalf("listLinks in %s: %v", path, err)
	}
	if len(got) != len(want) || len(got) != 3 {
		t.Fatalf("listLinks = %v, netlink lists %d links", got, len(want))
	}
	for _, l := range want {
		a := l.Attrs()
		up := a.Flags&net.FlagUp != 0
		if g, ok := got[a.Name]; !ok || g.Up != up {
			t.Errorf("link %q: listLinks has %+v (listed %t), netlink says up=%t", a.Name, g, ok, up)
		}
	}
	if !got["net1"].Up || got["net1p"].Up || got["lo"].Up {
		t.Errorf("listLinks = %v, want net1 up, net1p and lo down", got)
	}
}
