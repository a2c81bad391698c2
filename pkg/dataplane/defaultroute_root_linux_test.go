package dataplane

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

// podWithEth0 gives the pod netns an eth0 (a veth from the node netns) with
// IPv4 and IPv6 addresses and default routes, as a cluster CNI leaves it.
func podWithEth0(t *testing.T, node, pod string) {
	t.Helper()
	run(t, "ip", "-n", node, "link", "add", "pe0-"+randomHex(2), "type", "veth", "peer", "name", "eth0", "netns", pod)
	run(t, "ip", "-n", pod, "link", "set", "eth0", "up")
	run(t, "ip", "-n", pod, "addr", "add", "10.88.0.2/24", "dev", "eth0")
	run(t, "ip", "-n", pod, "addr", "add", "fd00:88::2/64", "dev", "eth0", "nodad")
	run(t, "ip", "-n", pod, "route", "add", "default", "via", "10.88.0.1", "dev", "eth0")
	run(t, "ip", "-n", pod, "-6", "route", "add", "default", "via", "fd00:88::1", "dev", "eth0")
}

// defaults describes the pod's default routes, sorted: "dev via metric proto".
func defaults(t *testing.T, pod string) []string {
	t.Helper()
	h := handle(t, pod)
	var out []string
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		routes, err := (&session{pod: h}).defaultRoutes(family) // no read back kept: listed now
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range routes {
			l, err := h.LinkByIndex(r.LinkIndex)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s via %s metric %d proto %d", l.Attrs().Name, r.Gw, r.Priority, r.Protocol))
		}
	}
	sort.Strings(out)
	return out
}

func requireDefaults(t *testing.T, pod string, want ...string) {
	t.Helper()
	sort.Strings(want)
	if got := defaults(t, pod); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("default routes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRootDefaultRouteMovesAndComesBack: an interface with default
// gateways carries the pod's default route of both families; eth0's routes
// stay, demoted; taking the gateways away, or detaching, brings them back
// with their own metrics.
func TestRootDefaultRouteMovesAndComesBack(t *testing.T) {
	d, node := newNode(t)
	podNS, p := newPod(t)
	podWithEth0(t, node, podNS)
	original := defaults(t, podNS)
	if len(original) != 2 {
		t.Fatalf("test setup: default routes %v", original)
	}
	p.Interfaces = []Interface{{
		Name: "net1", Kind: KindBridge, Bridge: "pnbr-dr",
		Addresses:       []net.IPNet{cidr(t, "192.168.30.5/24"), cidr(t, "fd00:30::5/64")},
		DefaultGateways: []net.IP{net.ParseIP("192.168.30.1").To4(), net.ParseIP("fd00:30::1")},
	}}
	moved := []string{
		"net1 via 192.168.30.1 metric 0 proto 113",
		"net1 via fd00:30::1 metric 1024 proto 113",
		fmt.Sprintf("eth0 via 10.88.0.1 metric %d proto 3", demotedMetric),
		fmt.Sprintf("eth0 via fd00:88::1 metric %d proto 3", 1024+demotedMetric),
	}
	apply(t, d, p)
	requireDefaults(t, podNS, moved...)
	requireIdempotent(t, d, p, podNS, node)

	// The grant goes at runtime: eth0 carries the default route again.
	without := p
	without.Interfaces = []Interface{p.Interfaces[0]}
	without.Interfaces[0].DefaultGateways = nil
	apply(t, d, without)
	requireDefaults(t, podNS, original...)

	// Back, then detached: the original routes return with the links' end.
	apply(t, d, p)
	requireDefaults(t, podNS, moved...)
	if err := d.Detach(context.Background(), p.UID, p.NetNS); err != nil {
		t.Fatalf("detach: %v", err)
	}
	requireDefaults(t, podNS, original...)
}

// TestRootDefaultRouteOneFamily: a gateway of one family moves only that
// family's default route.
func TestRootDefaultRouteOneFamily(t *testing.T) {
	d, node := newNode(t)
	podNS, p := newPod(t)
	podWithEth0(t, node, podNS)
	p.Interfaces = []Interface{{
		Name: "net1", Kind: KindBridge, Bridge: "pnbr-dr4",
		Addresses:       []net.IPNet{cidr(t, "192.168.31.5/24"), cidr(t, "fd00:31::5/64")},
		DefaultGateways: []net.IP{net.ParseIP("192.168.31.1").To4()},
	}}
	apply(t, d, p)
	requireDefaults(t, podNS,
		"net1 via 192.168.31.1 metric 0 proto 113",
		fmt.Sprintf("eth0 via 10.88.0.1 metric %d proto 3", demotedMetric),
		"eth0 via fd00:88::1 metric 1024 proto 3",
	)
}
