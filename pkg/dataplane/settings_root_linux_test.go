package dataplane

import (
	"context"
	"net"
	"strings"
	"testing"
)

// sysctl reads a network sysctl of the netns, as its own processes see it.
func sysctl(t *testing.T, ns, path string) string {
	t.Helper()
	return strings.TrimSpace(run(t, "ip", "netns", "exec", ns, "cat", "/proc/sys/net/"+path))
}

// TestRootSettings: the settings an interface lists are in place before
// it goes up (addr_gen_mode 1 leaves it without a link-local address),
// on a bridge and a macvlan interface; a second Apply changes nothing; a
// changed value is set in place; a name not in the table is refused
// without touching the pod.
func TestRootSettings(t *testing.T) {
	d, node := newNode(t)
	parent := addParent(t, node, "eth1")
	podNS, p := newPod(t)
	p.Interfaces = []Interface{
		{Name: "net1", Kind: KindBridge, Bridge: "pnbr-set", Addresses: []net.IPNet{cidr(t, "192.168.70.2/24")},
			Settings: map[string]int64{"arp_ignore": 2, "arp_announce": 1, "rp_filter": 1, "addr_gen_mode": 1, "dad_transmits": 3, "txqueuelen": 500}},
		{Name: "net2", Kind: KindMacvlan, Master: parent, Addresses: []net.IPNet{cidr(t, "192.168.71.2/24")},
			Settings: map[string]int64{"arp_ignore": 1, "txqueuelen": 2000}},
	}
	apply(t, d, p)
	for path, want := range map[string]string{
		"ipv4/conf/net1/arp_ignore": "2", "ipv4/conf/net1/arp_announce": "1", "ipv4/conf/net1/rp_filter": "1",
		"ipv6/conf/net1/addr_gen_mode": "1", "ipv6/conf/net1/dad_transmits": "3", "ipv4/conf/net2/arp_ignore": "1",
		// Not asked for: the kernel's.
		"ipv4/conf/net2/arp_announce": "0",
	} {
		if got := sysctl(t, podNS, path); got != want {
			t.Errorf("%s = %s, want %s", path, got, want)
		}
	}
	for name, want := range map[string]int{"net1": 500, "net2": 2000} {
		if got := mustLink(t, podNS, name).Attrs().TxQLen; got != want {
			t.Errorf("%s txqueuelen = %d, want %d", name, got, want)
		}
	}
	if out := run(t, "ip", "-n", podNS, "-6", "addr", "show", "dev", "net1"); strings.Contains(out, "fe80") {
		t.Errorf("addr_gen_mode 1 was set after net1 went up: it has a link-local address:\n%s", out)
	}
	requireIdempotent(t, d, p, podNS, node)

	index := mustLink(t, podNS, "net1").Attrs().Index
	p.Interfaces[0].Settings["arp_ignore"] = 1
	p.Interfaces[0].Settings["txqueuelen"] = 800
	apply(t, d, p)
	if got := sysctl(t, podNS, "ipv4/conf/net1/arp_ignore"); got != "1" {
		t.Errorf("arp_ignore after the change = %s, want 1", got)
	}
	if l := mustLink(t, podNS, "net1"); l.Attrs().Index != index || l.Attrs().TxQLen != 800 {
		t.Errorf("net1 after the change: index %d (was %d), txqueuelen %d, want set in place to 800", l.Attrs().Index, index, l.Attrs().TxQLen)
	}

	p.Interfaces[1].Settings = map[string]int64{"../all/arp_ignore": 1}
	_, err := d.Apply(context.Background(), p)
	requireMentions(t, err, `"net2"`, "../all/arp_ignore", "not a setting podnet knows")
	if got := sysctl(t, podNS, "ipv4/conf/all/arp_ignore"); got != "0" {
		t.Errorf("conf/all/arp_ignore = %s after a request naming it", got)
	}
}
