package portsecurity

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/nldump"
	"podnet.io/podnet/test/l2frame"
	"podnet.io/podnet/test/netnstest"
)

var (
	requireRoot = netnstest.RequireRoot
	randomHex   = netnstest.RandomHex
	run         = netnstest.Run
)

// newNetNS creates a throwaway named netns, removed when the test ends.
func newNetNS(t testing.TB, role string) string {
	name, _ := netnstest.NewNetNS(t, "pnps", role)
	return name
}

// lan is a throwaway node netns with a bridge, and pods on it.
type lan struct {
	node  string
	table Table
	pods  map[string]*pod
}

// pod is one pod netns with eth1, a veth whose node end is port.
type pod struct {
	ns   string
	port string
	mac  net.HardwareAddr
	ip4  net.IP
	ip6  net.IP
	// ll is the link's IPv6 link-local address when the kernel does not
	// derive it from mac (ipvlan links share their parent's MAC).
	ll net.IP
}

func (p *pod) linkLocal() net.IP {
	if p.ll != nil {
		return p.ll
	}
	return LinkLocalOf(p.mac)
}

// newLAN makes the node netns with bridge br0 (up, IPv6 off on the node
// side so that only pods talk).
func newLAN(t *testing.T) *lan {
	t.Helper()
	requireRoot(t)
	l := &lan{node: newNetNS(t, "node"), pods: map[string]*pod{}}
	fd, err := unix.Open(filepath.Join("/run/netns", l.node), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	l.table = Table{NetNS: fd}
	run(t, "ip", "netns", "exec", l.node, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
	run(t, "ip", "-n", l.node, "link", "add", "br0", "type", "bridge")
	run(t, "ip", "-n", l.node, "link", "set", "br0", "up")
	return l
}

// addPod makes a pod netns numbered n (MAC 02:00:00:00:00:n, 10.9.0.n/24,
// fd00:9::n/64) on the bridge. With secure, its port's rules are written
// before the port goes up, as the dataplane does.
func (l *lan) addPod(t *testing.T, name string, n int, secure bool) *pod {
	t.Helper()
	p := &pod{
		ns: newNetNS(t, name), port: fmt.Sprintf("pnt%d", n),
		mac: net.HardwareAddr{2, 0, 0, 0, 0, byte(n)},
		ip4: net.IPv4(10, 9, 0, byte(n)).To4(), ip6: net.ParseIP(fmt.Sprintf("fd00:9::%d", n)),
	}
	run(t, "ip", "-n", l.node, "link", "add", p.port, "type", "veth", "peer", "name", "eth1", "netns", p.ns)
	run(t, "ip", "-n", p.ns, "link", "set", "eth1", "address", p.mac.String())
	run(t, "ip", "-n", l.node, "link", "set", p.port, "master", "br0")
	run(t, "ip", "-n", p.ns, "addr", "add", p.ip4.String()+"/24", "dev", "eth1")
	run(t, "ip", "-n", p.ns, "addr", "add", p.ip6.String()+"/64", "dev", "eth1", "nodad")
	run(t, "ip", "-n", p.ns, "link", "set", "eth1", "up")
	if secure {
		l.secure(t, p, p.ip4, p.ip6)
	}
	run(t, "ip", "-n", l.node, "link", "set", p.port, "up")
	l.pods[name] = p
	waitLinkLocal(t, p)
	return p
}

// secure writes the port's rules for the given addresses.
func (l *lan) secure(t *testing.T, p *pod, addrs ...net.IP) {
	t.Helper()
	pl, err := PlanPort(Port{Name: p.port, MAC: p.mac, Addresses: addrs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.table.Ensure(pl); err != nil {
		t.Fatal(err)
	}
}

// waitLinkLocal waits until the pod's link-local address is usable (DAD
// done), so that ND from it is not sent from :: instead. A pod whose ll is
// the zero address takes the first link-local address the kernel made.
func waitLinkLocal(t *testing.T, p *pod) {
	t.Helper()
	h := netnstest.Handle(t, p.ns)
	deadline := time.Now().Add(30 * time.Second)
	for {
		addrs, err := nldump.Addrs(h, linkOf(t, h, "eth1"), netlink.FAMILY_V6)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range addrs {
			if p.ll != nil && p.ll.IsUnspecified() && a.IP.IsLinkLocalUnicast() {
				p.ll = a.IP
			}
			if a.IP.Equal(p.linkLocal()) && a.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s: link-local %s not usable after 30s: %v", p.ns, p.linkLocal(), addrs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func linkOf(t testing.TB, h *netlink.Handle, name string) netlink.Link {
	t.Helper()
	l, err := h.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// packetSocket opens an AF_PACKET socket on the pod's eth1, bound to the
// pod's netns (the socket keeps its netns; the test's thread never moves).
func packetSocket(t testing.TB, p *pod, proto uint16) int {
	t.Helper()
	fd := -1
	err := ns.WithNetNSPath(filepath.Join("/run/netns", p.ns), func(ns.NetNS) error {
		ifc, err := net.InterfaceByName("eth1")
		if err != nil {
			return err
		}
		proto := htons(proto)
		s, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(proto))
		if err != nil {
			return err
		}
		if err := unix.Bind(s, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifc.Index}); err != nil {
			unix.Close(s)
			return err
		}
		fd = s
		return nil
	})
	if err != nil {
		t.Fatalf("packet socket in %s: %v", p.ns, err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// sniffer reads the frames an observing pod receives.
type sniffer struct {
	fd int
}

func newSniffer(t testing.TB, p *pod) *sniffer {
	t.Helper()
	fd := packetSocket(t, p, unix.ETH_P_ALL)
	// A generous bound so that a lost marker fails the test instead of
	// hanging it; it is no timing assertion.
	tv := unix.NsecToTimeval((20 * time.Second).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	return &sniffer{fd: fd}
}

// sawBefore reads frames until one carrying marker arrives and reports
// whether one whose payload starts with tag came first. The bridge forwards one port's
// frames in order, so a tagged frame sent before the marker that is not
// seen by then was dropped.
func (s *sniffer) sawBefore(t testing.TB, tag, marker []byte) bool {
	t.Helper()
	buf := make([]byte, 65536)
	saw := false
	for {
		n, _, err := unix.Recvfrom(s.fd, buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("waiting for marker %q: %v", marker, err)
		}
		if bytes.Contains(buf[:n], marker) {
			return saw
		}
		if n >= 14 && bytes.HasPrefix(l2frame.Payload(buf[:n]), tag) {
			saw = true
		}
	}
}

// sender writes raw frames out of a pod's eth1, as a process with NET_RAW
// can.
type sender struct {
	p       *pod
	fd      int
	ifindex int
	// markers, when set, sends the markers instead (a socket that
	// bypasses the queueing discipline may have all its frames dropped).
	markers *sender
}

func newSender(t testing.TB, p *pod) *sender {
	t.Helper()
	fd := packetSocket(t, p, 0)
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return &sender{p: p, fd: fd, ifindex: sa.(*unix.SockaddrLinklayer).Ifindex}
}

func (s *sender) send(t testing.TB, frame []byte) {
	t.Helper()
	s.sendAs(t, frame, binary.BigEndian.Uint16(frame[12:14]))
}

// sendAs sends frame with the packet socket's protocol (sll_protocol, what
// the kernel takes for the frame's protocol) set to proto, as a tool that
// names its frames' protocol does; 0 leaves it to the kernel.
func (s *sender) sendAs(t testing.TB, frame []byte, proto uint16) {
	t.Helper()
	// ENOBUFS is a frame dropped on its way out: by an egress filter in
	// the pod's own netns (macvlan and ipvlan port security).
	to := &unix.SockaddrLinklayer{Ifindex: s.ifindex, Protocol: htons(proto)}
	if err := unix.Sendto(s.fd, frame, 0, to); err != nil && !errors.Is(err, unix.ENOBUFS) {
		t.Fatalf("send from %s: %v", s.p.ns, err)
	}
}

// marker is a frame the sender's port passes (its own MAC and IPv4 address
// to broadcast), carrying a unique text.
func (s *sender) marker(text []byte) []byte {
	return l2frame.Eth(l2frame.Broadcast, s.p.mac, unix.ETH_P_IP, l2frame.UDP4(s.p.ip4, net.IPv4bcast, text))
}

// passes sends frame and then a marker, and reports whether the observer
// received the frame. Frames are told apart by what follows their Ethernet
// header (and VLAN tag): the node's bridge may trim anything after an IP
// packet, and a packet socket shows a VLAN tag apart from the frame.
func (s *sender) passes(t testing.TB, obs *sniffer, frame []byte) bool {
	t.Helper()
	marker := []byte("marker-" + randomHex(6))
	s.send(t, frame)
	m := s
	if s.markers != nil {
		m = s.markers
	}
	m.send(t, m.marker(marker))
	return obs.sawBefore(t, l2frame.Payload(frame), marker)
}

// neighMAC is the MAC a pod's neighbour table holds for ip, nil for none.
func neighMAC(t testing.TB, p *pod, ip net.IP) net.HardwareAddr {
	t.Helper()
	h := netnstest.Handle(t, p.ns)
	family := netlink.FAMILY_V4
	if ip.To4() == nil {
		family = netlink.FAMILY_V6
	}
	neighs, err := nldump.Neighs(h, linkOf(t, h, "eth1").Attrs().Index, family)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range neighs {
		if n.IP.Equal(ip) {
			return n.HardwareAddr
		}
	}
	return nil
}

// ping sends one echo request from a pod (busybox ping: no other ping is
// needed on the machine or in the kernel VM).
func ping(t testing.TB, from *pod, to net.IP) error {
	t.Helper()
	args := []string{"netns", "exec", from.ns, "busybox", "ping", "-c", "1", "-W", "10"}
	if to.To4() == nil {
		args = append(args, "-I", "eth1")
	}
	out, err := exec.Command("ip", append(args, to.String())...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ping %s from %s: %w: %s", to, from.ns, err, out)
	}
	return nil
}
