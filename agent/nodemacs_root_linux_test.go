package agent

import (
	"context"
	"strings"
	"testing"

	"podnet.io/podnet/pkg/policy"
	"podnet.io/podnet/test/netnstest"
)

// TestRootNodeMACsSeesLinksAndFDBButThePodsOwnPorts reads a throwaway
// node netns with real netlink: a bridge, its uplink and the node end of
// another pod's port are seen with their MACs, and so is a MAC the bridge
// holds for that port; the pod's own port and what the bridge holds for
// it are not.
func TestRootNodeMACsSeesLinksAndFDBButThePodsOwnPorts(t *testing.T) {
	netnstest.RequireRoot(t)
	name, path := netnstest.NewNetNS(t, "pnmacs", "node")
	run := func(args ...string) { netnstest.Run(t, append([]string{"ip", "-n", name}, args...)...) }
	run("link", "add", "pnbr-data", "address", "0a:00:00:00:00:01", "type", "bridge")
	run("link", "add", "uplink0", "address", "0a:00:00:00:00:02", "type", "veth", "peer", "name", "uplink0p")
	run("link", "set", "uplink0", "master", "pnbr-data")
	run("link", "add", "pnother", "address", "0a:00:00:00:00:03", "type", "veth", "peer", "name", "pnotherp", "address", "0a:00:00:00:00:13")
	run("link", "set", "pnother", "alias", "podnet:uid-other:net1", "master", "pnbr-data")
	run("link", "add", "pnmine", "address", "0a:00:00:00:00:04", "type", "veth", "peer", "name", "pnminep", "address", "0a:00:00:00:00:14")
	run("link", "set", "pnmine", "alias", "podnet:uid-mine:net1", "master", "pnbr-data")
	for _, l := range []string{"pnbr-data", "uplink0", "pnother", "pnmine"} {
		run("link", "set", l, "up")
	}
	// What the bridge would learn from each pod's frames.
	netnstest.Run(t, "bridge", "-n", name, "fdb", "add", "0a:00:00:00:00:23", "dev", "pnother", "master", "static")
	netnstest.Run(t, "bridge", "-n", name, "fdb", "add", "0a:00:00:00:00:24", "dev", "pnmine", "master", "static")

	seen, err := NetlinkNodeMACs{NetNS: path}.Seen(context.Background(), "uid-mine")
	if err != nil {
		t.Fatal(err)
	}
	of := map[string]string{}
	for _, s := range seen {
		if _, dup := of[s.MAC]; !dup {
			of[s.MAC] = s.Of
		}
	}
	for mac, want := range map[string]string{
		"0a:00:00:00:00:01": `"pnbr-data"`,
		"0a:00:00:00:00:02": `"uplink0"`,
		"0a:00:00:00:00:03": `"pnother"`,
		"0a:00:00:00:00:23": `an FDB entry on port "pnother" of bridge "pnbr-data"`,
	} {
		if !strings.Contains(of[mac], want) {
			t.Errorf("%s seen as %q, want %q", mac, of[mac], want)
		}
	}
	for _, mac := range []string{"0a:00:00:00:00:04", "0a:00:00:00:00:24"} {
		if o, ok := of[mac]; ok {
			t.Errorf("%s of the pod's own port seen as %q", mac, o)
		}
	}
	if err := policy.CheckNodeMAC(nil, "0a:00:00:00:00:23", seen); err == nil {
		t.Error("another pod's learned MAC accepted")
	}
	if err := policy.CheckNodeMAC(nil, "0a:00:00:00:00:24", seen); err != nil {
		t.Errorf("the pod's own MAC refused: %v", err)
	}
}
