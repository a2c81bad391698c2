package podwait

import (
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// veth is a veth pair with both ends in the same (throwaway) namespace;
// dummy links are not available on every kernel these tests run on.
func veth(name string) *netlink.Veth {
	return &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: name + "p"}
}

func mustNS(t *testing.T, path string) netns.NsHandle {
	t.Helper()
	h, err := netns.GetFromPath(path)
	if err != nil {
		t.Fatalf("open netns %q: %v", path, err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}
