package portsecurity

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"podnet.io/podnet/test/l2frame"
	"podnet.io/podnet/test/netnstest"
)

// parentLAN is a throwaway node netns with a parent link (a veth end) and
// pods with macvlan or ipvlan links on it: what pods of one parent send
// each other never crosses a node bridge.
type parentLAN struct {
	node string
	kind []string // the ip link type arguments
}

// addPod makes a pod netns numbered n with eth1 on the parent (MAC
// 02:00:00:00:01:n for macvlan; ipvlan links share the parent's), its
// rules written into the pod's egress table before eth1 goes up when
// secure.
func (l *parentLAN) addPod(t *testing.T, name string, n int, secure bool) *pod {
	t.Helper()
	p := &pod{ns: newNetNS(t, name), port: "eth1",
		ip4: net.IPv4(10, 9, 0, byte(n)).To4(), ip6: net.ParseIP(fmt.Sprintf("fd00:9::%d", n))}
	tmp := fmt.Sprintf("pnp%d", n)
	run(t, append([]string{"ip", "-n", l.node, "link", "add", "link", "p0", "name", tmp, "netns", p.ns}, l.kind...)...)
	run(t, "ip", "-n", p.ns, "link", "set", "dev", tmp, "name", "eth1")
	if l.kind[1] == "macvlan" {
		run(t, "ip", "-n", p.ns, "link", "set", "dev", "eth1", "address", fmt.Sprintf("02:00:00:00:01:%02x", n))
	}
	p.mac = linkOf(t, netnstest.Handle(t, p.ns), "eth1").Attrs().HardwareAddr
	run(t, "ip", "-n", p.ns, "addr", "add", p.ip4.String()+"/24", "dev", "eth1")
	run(t, "ip", "-n", p.ns, "addr", "add", p.ip6.String()+"/64", "dev", "eth1", "nodad")
	port := Port{Name: "eth1", MAC: p.mac, Addresses: []net.IP{p.ip4, p.ip6}}
	if secure {
		egressOf(t, p).ensure(t, port)
	}
	if l.kind[1] == "ipvlan" {
		// Not derived from the MAC, which every link of the parent
		// shares: read once the link is up, and allowed then, as the
		// dataplane does after an apply.
		p.ll = net.IPv6unspecified
	}
	run(t, "ip", "-n", p.ns, "link", "set", "eth1", "up")
	waitLinkLocal(t, p)
	if secure && p.ll != nil {
		port.LinkLocal = []net.IP{p.ll}
		egressOf(t, p).ensure(t, port)
	}
	return p
}

// podEgress is a pod's egress table, on an fd of its netns.
type podEgress struct{ Egress }

func egressOf(t *testing.T, p *pod) podEgress {
	t.Helper()
	fd, err := unix.Open(filepath.Join("/run/netns", p.ns), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return podEgress{Egress{NetNS: fd}}
}

func (e podEgress) ensure(t *testing.T, port Port) {
	t.Helper()
	pl, err := PlanPort(port)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Ensure(pl); err != nil {
		t.Fatal(err)
	}
}

// TestRootEgressPortSecurity: on macvlan and ipvlan, pod links of one
// parent reach each other without a node bridge; a secured pod link's
// egress, filtered in its own netns, drops the same spoofed frames as a
// bridge port (frameCases), and an unsecured pod's frames (the control)
// arrive. A packet socket that bypasses the queueing discipline gets none
// of the spoofed frames through either (of its own frames, the kernel may
// hand the hook some without a MAC header, which are dropped: only what
// must not arrive is checked then). Ensure again changes nothing; Remove
// lifts the filter.
func TestRootEgressPortSecurity(t *testing.T) {
	requireRoot(t)
	for _, kind := range [][]string{{"type", "macvlan", "mode", "bridge"}, {"type", "ipvlan", "mode", "l2"}} {
		t.Run(kind[1], func(t *testing.T) {
			l := &parentLAN{node: newNetNS(t, "node"), kind: kind}
			run(t, "ip", "-n", l.node, "link", "add", "p0", "type", "veth", "peer", "name", "p1")
			run(t, "ip", "-n", l.node, "link", "set", "p0", "up")
			run(t, "ip", "-n", l.node, "link", "set", "p1", "up")
			if out, err := exec.Command("ip", append([]string{"-n", l.node, "link", "add", "link", "p0", "name", "probe"}, kind...)...).CombinedOutput(); err != nil {
				t.Skipf("this kernel has no %s (module %s): %v: %s", kind[1], kind[1], err, strings.TrimSpace(string(out)))
			}
			run(t, "ip", "-n", l.node, "link", "del", "probe")
			a := l.addPod(t, "a", 1, true)
			o := l.addPod(t, "o", 3, true)
			u := l.addPod(t, "u", 4, false)
			// The victim's identity: on ipvlan every link has the
			// parent's MAC, so the one posed as is another.
			v := &pod{mac: net.HardwareAddr{2, 0, 0, 0, 1, 2}, ip4: net.IPv4(10, 9, 0, 2).To4(), ip6: net.ParseIP("fd00:9::2")}
			obs := newSniffer(t, o)
			for _, bypass := range []bool{false, true} {
				for _, from := range []*pod{a, u} {
					s := newSender(t, from)
					if bypass {
						if err := unix.SetsockoptInt(s.fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
							t.Fatal(err)
						}
						s.markers = newSender(t, from)
					}
					for _, tc := range frameCases {
						if !deliverable(kind[1], tc.name) || (bypass && from != u && tc.passes) {
							continue
						}
						want := tc.passes || from == u
						if got := s.passes(t, obs, tc.frame(from, v, o)); got != want {
							t.Errorf("%s from %s (secured %v, qdisc bypass %v): arrived = %v, want %v", tc.name, from.ns, from != u, bypass, got, want)
						}
					}
				}
			}
			if err := ping(t, a, o.ip4); err != nil {
				t.Errorf("a secured pod's own traffic: %v", err)
			}
			// A frame handed to the kernel as another protocol than its
			// EtherType, which the rules reading the transport header
			// would not parse.
			for _, from := range []*pod{a, u} {
				ra := frameCases[slices.IndexFunc(frameCases, func(c frameCase) bool { return c.name == "router advertisement" })].frame(from, v, o)
				s, m := newSender(t, from), []byte("marker-"+randomHex(6))
				s.sendAs(t, ra, unix.ETH_P_ARP)
				s.send(t, s.marker(m))
				if got := obs.sawBefore(t, l2frame.Payload(ra), m); got != (from == u) {
					t.Errorf("router advertisement sent as ARP from %s (secured %v): arrived = %v", from.ns, from != u, got)
				}
			}
			e := egressOf(t, a)
			again := Port{Name: "eth1", MAC: a.mac, Addresses: []net.IP{a.ip4, a.ip6}}
			if a.ll != nil {
				again.LinkLocal = []net.IP{a.ll}
			}
			pl, err := PlanPort(again)
			if err != nil {
				t.Fatal(err)
			}
			if changed, err := e.Ensure(pl); err != nil || changed {
				t.Errorf("ensuring the plan in place again: changed %v, err %v; want nothing written", changed, err)
			}
			if err := e.Remove("eth1", "net9"); err != nil {
				t.Fatal(err)
			}
			if links, err := e.Links(); err != nil || slices.Contains(links, "eth1") {
				t.Fatalf("links with rules after Remove: %v, %v", links, err)
			}
			spoofed := frameCases[slices.IndexFunc(frameCases, func(c frameCase) bool { return c.name == "spoofed ipv4 source" })]
			if !newSender(t, a).passes(t, obs, spoofed.frame(a, v, o)) {
				t.Error("after Remove, a's link still drops a spoofed frame")
			}
		})
	}
}

// deliverable says whether a case's frame reaches the observer at all on
// the kind, filtered or not: macvlan and ipvlan deliver multicast only to
// links that joined its group (the probe's solicited-node group is
// no one's), and ipvlan delivers by address, so a frame from or to a MAC
// other than the parent's is not a frame between its links.
func deliverable(kind, name string) bool {
	switch {
	case strings.Contains(name, "duplicate address detection"):
		return false
	case kind == "ipvlan":
		return !strings.Contains(name, "mac")
	}
	return true
}
