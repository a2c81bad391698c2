package dataplane

import (
	"context"
	"strings"
	"testing"
)

// feature reads one feature's state in the pod with ethtool, apart from
// podnet's own code: "on", "off", or "off [fixed]".
func feature(t *testing.T, ns, link, name string) string {
	t.Helper()
	for _, line := range strings.Split(run(t, "ip", "netns", "exec", ns, "ethtool", "-k", link), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+": "); ok {
			return v
		}
	}
	t.Fatalf("ethtool -k %s in %s lists no %s", link, ns, name)
	return ""
}

// TestRootOffloads: the features a veth interface lists are set before it
// goes up; a second Apply changes nothing; a change is made in place; a
// feature the device fixes (a veth's tx-checksum-ipv4, a macvlan's, which
// follow its parent), and a name that is ethtool's alias rather than the
// kernel's, are refused by name, and a new link that failed so is not left
// in the pod.
func TestRootOffloads(t *testing.T) {
	d, node := newNode(t)
	parent := addParent(t, node, "eth1")
	podNS, p := newPod(t)
	p.Interfaces = []Interface{
		{Name: "net1", Kind: KindBridge, Bridge: "pnbr-off", Offloads: map[string]bool{"tx-checksum-ip-generic": false, "tx-tcp-segmentation": false}},
	}
	apply(t, d, p)
	for _, c := range []struct{ link, name, want string }{
		{"net1", "tx-checksum-ip-generic", "off"}, {"net1", "tx-tcp-segmentation", "off"},
		{"net1", "tx-scatter-gather", "on"}, // not asked for
	} {
		if got := feature(t, podNS, c.link, c.name); got != c.want {
			t.Errorf("%s %s = %s, want %s", c.link, c.name, got, c.want)
		}
	}
	requireIdempotent(t, d, p, podNS, node)

	index := mustLink(t, podNS, "net1").Attrs().Index
	p.Interfaces[0].Offloads["tx-checksum-ip-generic"] = true
	apply(t, d, p)
	if got := feature(t, podNS, "net1", "tx-checksum-ip-generic"); got != "on" || mustLink(t, podNS, "net1").Attrs().Index != index {
		t.Errorf("tx-checksum-ip-generic after the change: %s, index %d (was %d); want on, in place", got, mustLink(t, podNS, "net1").Attrs().Index, index)
	}

	p.Interfaces[0].Offloads = map[string]bool{"tx-checksum-ipv4": true}
	_, err := d.Apply(context.Background(), p)
	requireMentions(t, err, `"net1"`, "tx-checksum-ipv4", "fixed")
	p.Interfaces[0].Offloads = map[string]bool{"gro": false}
	_, err = d.Apply(context.Background(), p)
	requireMentions(t, err, `"net1"`, "offload gro", "not a feature of this device")

	// A macvlan takes its features from its parent: the kernel keeps them
	// whatever is asked, and the attach says which.
	mvNS, m := newPod(t)
	m.Interfaces = []Interface{{Name: "net1", Kind: KindMacvlan, Master: parent, Offloads: map[string]bool{"tx-nocache-copy": true}}}
	_, err = d.Apply(context.Background(), m)
	requireMentions(t, err, `"net1"`, "tx-nocache-copy", "keeps it off (fixed)")
	if got := linkNames(t, mvNS); len(got) != 0 {
		t.Errorf("the macvlan that failed is left in the pod: %v", got)
	}
}
