package nri

import (
	"testing"

	"github.com/vishvananda/netlink"

	"podnet.io/podnet/test/netnstest"
)

// TestRootLinksIn reads a real netns of the test's own: what is missing
// is told apart from what is there, without the test's thread moving.
func TestRootLinksIn(t *testing.T) {
	netnstest.RequireRoot(t)
	name, path := netnstest.NewNetNS(t, "pnnri", "pod")
	h := netnstest.Handle(t, name)
	if err := h.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "net1"}}); err != nil {
		t.Fatal(err)
	}
	links, err := linksIn(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := missingInterfaces([]string{"net1", "net2"}, links); len(got) != 1 || got[0] != "net2" {
		t.Errorf("missing = %v, want [net2]", got)
	}
	if _, err := linksIn("/proc/self/status"); err == nil {
		t.Error("linksIn of a file that is no netns succeeded")
	}
	if _, err := linksIn(""); err == nil {
		t.Error("linksIn of no netns succeeded")
	}
}
