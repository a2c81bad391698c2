package underlay

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/nldump"
	"podnet.io/podnet/test/netnstest"
)

// sendEnv makes the test binary, started inside a namespace by sendFrom,
// send one VXLAN packet and exit: "src dst port vni mac" (src "-": the
// kernel's choice, through a UDP socket; otherwise a raw socket spoofing
// it).
const sendEnv = "PODNET_UNDERLAY_TEST_SEND"

// send6Env is sendEnv's IPv6 form: "src dst vni mac fragments", where
// fragments 2 splits the datagram so that the first fragment carries only
// the UDP header.
const send6Env = "PODNET_UNDERLAY_TEST_SEND6"

func TestMain(m *testing.M) {
	for env, send := range map[string]func(string) error{sendEnv: sendVXLAN, send6Env: sendVXLAN6} {
		if spec := os.Getenv(env); spec != "" {
			if err := send(spec); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

// sendVXLAN6 sends one VXLAN packet over IPv6 to port 4789 through a raw
// socket (the IPv6 header written here), whole or in two fragments.
func sendVXLAN6(spec string) error {
	var src, dst, macs string
	var vni uint32
	var fragments int
	if _, err := fmt.Sscan(spec, &src, &dst, &vni, &macs, &fragments); err != nil {
		return fmt.Errorf("%s %q: %w", send6Env, spec, err)
	}
	mac, err := net.ParseMAC(macs)
	if err != nil {
		return err
	}
	s, d := netip.MustParseAddr(src).As16(), netip.MustParseAddr(dst).As16()
	payload := arpFrame(vni, mac)
	udp := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint16(udp[0:], 40000)
	binary.BigEndian.PutUint16(udp[2:], 4789)
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(payload)))
	udp = append(udp, payload...)
	pseudo := append(append(append([]byte{}, s[:]...), d[:]...), 0, 0, byte(len(udp)>>8), byte(len(udp)), 0, 0, 0, unix.IPPROTO_UDP)
	binary.BigEndian.PutUint16(udp[6:], checksum(append(pseudo, udp...)))
	packet := func(next byte, body []byte) []byte {
		h := []byte{0x60, 0, 0, 0, byte(len(body) >> 8), byte(len(body)), next, 64}
		return append(append(append(h, s[:]...), d[:]...), body...)
	}
	var pkts [][]byte
	if fragments < 2 {
		pkts = append(pkts, packet(unix.IPPROTO_UDP, udp))
	} else {
		frag := func(offset int, more bool, data []byte) []byte {
			off := uint16(offset/8) << 3
			if more {
				off |= 1
			}
			h := []byte{unix.IPPROTO_UDP, 0, byte(off >> 8), byte(off), 0, 0, 0x12, 0x34}
			return packet(unix.IPPROTO_FRAGMENT, append(h, data...))
		}
		pkts = append(pkts, frag(0, true, udp[:8]), frag(8, false, udp[8:]))
	}
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_RAW)
	if err != nil {
		return fmt.Errorf("raw socket: %w", err)
	}
	defer unix.Close(fd)
	for _, p := range pkts {
		if err := unix.Sendto(fd, p, 0, &unix.SockaddrInet6{Addr: d}); err != nil {
			return err
		}
	}
	return nil
}

// checksum is the Internet checksum of b.
func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

// arpFrame is a VXLAN packet (8-byte header, vni) carrying an Ethernet
// broadcast ARP request from mac, asking for 192.168.5.1 as 192.168.5.66.
func arpFrame(vni uint32, mac net.HardwareAddr) []byte {
	b := []byte{0x08, 0, 0, 0, byte(vni >> 16), byte(vni >> 8), byte(vni), 0}
	b = append(b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	b = append(b, mac...)
	b = append(b, 0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1)
	b = append(b, mac...)
	b = append(b, 192, 168, 5, 66, 0, 0, 0, 0, 0, 0, 192, 168, 5, 1)
	return b
}

func sendVXLAN(spec string) error {
	var src, dst, macs string
	var port, vni uint32
	if _, err := fmt.Sscan(spec, &src, &dst, &port, &vni, &macs); err != nil {
		return fmt.Errorf("%s %q: %w", sendEnv, spec, err)
	}
	mac, err := net.ParseMAC(macs)
	if err != nil {
		return err
	}
	payload := arpFrame(vni, mac)
	if src == "-" {
		c, err := net.Dial("udp4", net.JoinHostPort(dst, fmt.Sprint(port)))
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write(payload)
		return err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
	if err != nil {
		return fmt.Errorf("raw socket: %w", err)
	}
	defer unix.Close(fd)
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	// IPv4 header (the kernel fills in the checksum), UDP header with no
	// checksum (allowed over IPv4), payload.
	pkt := []byte{0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, unix.IPPROTO_UDP, 0, 0}
	pkt = append(pkt, s[:]...)
	pkt = append(pkt, d[:]...)
	udp := make([]byte, 8)
	binary.BigEndian.PutUint16(udp[0:], 40000)
	binary.BigEndian.PutUint16(udp[2:], uint16(port))
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(payload)))
	pkt = append(append(pkt, udp...), payload...)
	binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))
	return unix.Sendto(fd, pkt, 0, &unix.SockaddrInet4{Addr: d})
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root (network namespaces, nftables); run it as root")
	}
}

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func newNetNS(t *testing.T, role string) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "pnul-" + role + "-" + hex.EncodeToString(b)
	run(t, "ip", "netns", "add", name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	run(t, "ip", "-n", name, "link", "set", "lo", "up")
	return name
}

// sendFrom sends one VXLAN ARP packet from inside netns ns.
func sendFrom(t *testing.T, ns, src, dst string, vni uint32, mac string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", ns, exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s 4789 %d %s", sendEnv, src, dst, vni, mac))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("send from %s: %v: %s", ns, err, out)
	}
}

// learned reports whether the VXLAN device vx in ns has learned mac.
func learned(t *testing.T, ns, vx, mac string) bool {
	t.Helper()
	h := netnstest.Handle(t, ns)
	l, err := h.LinkByName(vx)
	if err != nil {
		t.Fatal(err)
	}
	fdb, err := nldump.Neighs(h, l.Attrs().Index, unix.AF_BRIDGE)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range fdb {
		if e.HardwareAddr.String() == mac {
			return true
		}
	}
	return false
}

// waitLearned waits until the device has learned mac.
func waitLearned(t *testing.T, ns, vx, mac string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !learned(t, ns, vx, mac) {
		if time.Now().After(deadline) {
			t.Fatalf("%s in %s never learned %s", vx, ns, mac)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// drops sums the packets dropped by the rules of a chain of podnet's
// table.
func drops(t *testing.T, path, chain string) uint64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	table := &nftables.Table{Name: TableName, Family: nftables.TableFamilyINet}
	rules, err := c.GetRules(table, &nftables.Chain{Name: chain, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, r := range rules {
		for _, e := range r.Exprs {
			if ctr, ok := e.(*expr.Counter); ok {
				n += ctr.Packets
			}
		}
	}
	return n
}

// TestRootTableLocksVXLAN builds two nodes joined by a link, a VXLAN
// network on both, a pod on node A (the attacker, routed by A) and the
// victim's bridge on A. Without podnet's table the attacker injects into
// the VNI (the test can see an injection); with it, the attacker's packet
// to A, its packet spoofing B's address and its packet routed through A to
// B are all dropped, while B's own packet still reaches A. Applying again
// changes nothing, another table is left alone, and an empty ruleset
// removes podnet's table.
func TestRootTableLocksVXLAN(t *testing.T) {
	requireRoot(t)
	a, b, p := newNetNS(t, "a"), newNetNS(t, "b"), newNetNS(t, "p")
	for _, cmd := range [][]string{
		{"ip", "-n", a, "link", "add", "a0", "type", "veth", "peer", "b0", "netns", b},
		{"ip", "-n", a, "addr", "add", "10.99.0.1/24", "dev", "a0"},
		{"ip", "-n", b, "addr", "add", "10.99.0.2/24", "dev", "b0"},
		{"ip", "-n", a, "link", "set", "a0", "up"},
		{"ip", "-n", b, "link", "set", "b0", "up"},
		{"ip", "-n", a, "link", "add", "ap", "type", "veth", "peer", "p0", "netns", p},
		{"ip", "-n", a, "addr", "add", "10.99.1.1/24", "dev", "ap"},
		{"ip", "-n", p, "addr", "add", "10.99.1.2/24", "dev", "p0"},
		{"ip", "-n", a, "link", "set", "ap", "up"},
		{"ip", "-n", p, "link", "set", "p0", "up"},
		{"ip", "-n", p, "route", "add", "default", "via", "10.99.1.1"},
		{"ip", "netns", "exec", a, "sysctl", "-qw", "net.ipv4.ip_forward=1"},
		{"ip", "-n", a, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", a, "link", "set", "br0", "up"},
	} {
		run(t, cmd...)
	}
	for _, n := range []struct{ ns, local string }{{a, "10.99.0.1"}, {b, "10.99.0.2"}} {
		run(t, "ip", "-n", n.ns, "link", "add", "vx0", "type", "vxlan", "id", "100", "dstport", "4789", "local", n.local)
		run(t, "ip", "-n", n.ns, "link", "set", "vx0", "up")
	}
	run(t, "ip", "-n", a, "link", "set", "vx0", "master", "br0")

	// Without the table, a pod injects into the VNI.
	sendFrom(t, p, "-", "10.99.0.1", 100, "02:00:00:00:00:01")
	waitLearned(t, a, "vx0", "02:00:00:00:00:01")

	rs, err := Plan([]Tunnel{
		VXLAN(4789, 100, IPv4, addrs("10.99.0.2")),
		VXLAN(4789, 200, IPv6, addrs("fd00::2")),
	})
	if err != nil {
		t.Fatal(err)
	}
	tbl := &Table{NetNS: filepath.Join("/run/netns", a)}
	// A table of someone else's, which podnet must leave alone.
	other := func() bool {
		f, _ := os.Open(tbl.NetNS)
		defer f.Close()
		c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
		if err != nil {
			t.Fatal(err)
		}
		ts, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range ts {
			if x.Name == "someone-else" {
				return true
			}
		}
		return false
	}
	{
		f, _ := os.Open(tbl.NetNS)
		c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
		if err != nil {
			t.Fatal(err)
		}
		c.AddTable(&nftables.Table{Name: "someone-else", Family: nftables.TableFamilyINet})
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	for range 2 {
		if err := tbl.Apply(rs); err != nil {
			t.Fatal(err)
		}
	}

	sendFrom(t, p, "-", "10.99.0.1", 100, "02:00:00:00:00:02")
	sendFrom(t, p, "10.99.0.2", "10.99.0.1", 100, "02:00:00:00:00:03")
	sendFrom(t, p, "-", "10.99.0.2", 100, "02:00:00:00:00:04")
	// B's own packet passes, and is sent after the attacker's.
	sendFrom(t, b, "-", "10.99.0.1", 100, "02:00:00:00:00:05")
	waitLearned(t, a, "vx0", "02:00:00:00:00:05")
	for _, c := range []struct{ ns, mac, what string }{
		{a, "02:00:00:00:00:02", "a pod's packet to its node"},
		{a, "02:00:00:00:00:03", "a pod's packet spoofing the peer's address"},
		{b, "02:00:00:00:00:04", "a pod's packet routed by its node to a peer"},
	} {
		if learned(t, c.ns, "vx0", c.mac) {
			t.Errorf("%s reached the VNI", c.what)
		}
	}
	if in, fwd := drops(t, tbl.NetNS, "input"), drops(t, tbl.NetNS, "forward"); in != 2 || fwd != 1 {
		t.Errorf("dropped %d packets on input and %d forwarded, want 2 and 1", in, fwd)
	}
	if !other() {
		t.Error("applying podnet's table removed another table")
	}
	if err := tbl.Apply(Ruleset{}); err != nil {
		t.Fatal(err)
	}
	if ok, err := tbl.Exists(); err != nil || ok {
		t.Fatalf("after an empty ruleset the table exists: %v, %v", ok, err)
	}
	if !other() {
		t.Error("removing podnet's table removed another table")
	}
	if err := tbl.Apply(Ruleset{}); err != nil {
		t.Fatalf("removing an absent table: %v", err)
	}
	sendFrom(t, p, "-", "10.99.0.1", 100, "02:00:00:00:00:06")
	waitLearned(t, a, "vx0", "02:00:00:00:00:06")
}

// TestRootTableDropsIPv6Fragments: over an IPv6 underlay the kernel
// reassembles fragments after the input hook. A pod on the underlay
// segment sends a VXLAN datagram for the node's VNI in two fragments, the
// first holding only the UDP header, so that no rule can read its VNI:
// with a table that judges only whole datagrams (the control, the table as
// it was) the reassembled frame reaches the VNI; with podnet's table it
// does not, nor does the same datagram whole, while the peer's own packet
// still does.
func TestRootTableDropsIPv6Fragments(t *testing.T) {
	requireRoot(t)
	a, b, p := newNetNS(t, "a"), newNetNS(t, "b"), newNetNS(t, "p")
	for _, cmd := range [][]string{
		{"ip", "-n", a, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", a, "link", "set", "br0", "up"},
		{"ip", "-n", a, "link", "add", "seg", "type", "bridge"},
		{"ip", "-n", a, "link", "set", "seg", "up"},
		{"ip", "-n", a, "addr", "add", "fd00:99::1/64", "dev", "seg", "nodad"},
	} {
		run(t, cmd...)
	}
	for _, n := range []struct{ ns, addr string }{{b, "fd00:99::2/64"}, {p, "fd00:99::3/64"}} {
		run(t, "ip", "-n", a, "link", "add", "to-"+n.ns[5:6], "type", "veth", "peer", "eth0", "netns", n.ns)
		run(t, "ip", "-n", a, "link", "set", "to-"+n.ns[5:6], "master", "seg", "up")
		run(t, "ip", "-n", n.ns, "addr", "add", n.addr, "dev", "eth0", "nodad")
		run(t, "ip", "-n", n.ns, "link", "set", "eth0", "up")
	}
	run(t, "ip", "-n", a, "link", "add", "vx0", "type", "vxlan", "id", "100", "dstport", "4789", "local", "fd00:99::1")
	run(t, "ip", "-n", a, "link", "set", "vx0", "master", "br0", "up")
	send := func(ns, src string, fragments int, mac string) {
		t.Helper()
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("ip", "netns", "exec", ns, exe)
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s fd00:99::1 100 %s %d", send6Env, src, mac, fragments))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("send from %s: %v: %s", ns, err, out)
		}
	}
	rs, err := Plan([]Tunnel{VXLAN(4789, 100, IPv6, addrs("fd00:99::2"))})
	if err != nil {
		t.Fatal(err)
	}
	tbl := &Table{NetNS: filepath.Join("/run/netns", a)}

	// The control: the same table without the fragment rule.
	whole := rs
	whole.Rules = nil
	for _, r := range rs.Rules {
		if r.Check != Fragmented {
			whole.Rules = append(whole.Rules, r)
		}
	}
	if len(whole.Rules) == len(rs.Rules) {
		t.Fatal("the plan has no rule for IPv6 fragments")
	}
	if err := tbl.Apply(whole); err != nil {
		t.Fatal(err)
	}
	send(p, "fd00:99::3", 1, "02:00:00:00:06:01")
	send(p, "fd00:99::3", 2, "02:00:00:00:06:02")
	waitLearned(t, a, "vx0", "02:00:00:00:06:02")
	if learned(t, a, "vx0", "02:00:00:00:06:01") {
		t.Fatal("control: the whole datagram from a non-peer reached the VNI")
	}

	if err := tbl.Apply(rs); err != nil {
		t.Fatal(err)
	}
	send(p, "fd00:99::3", 2, "02:00:00:00:06:03")
	send(p, "fd00:99::2", 2, "02:00:00:00:06:04") // spoofing the peer
	send(b, "fd00:99::2", 1, "02:00:00:00:06:05")
	waitLearned(t, a, "vx0", "02:00:00:00:06:05")
	for _, mac := range []string{"02:00:00:00:06:03", "02:00:00:00:06:04"} {
		if learned(t, a, "vx0", mac) {
			t.Errorf("a fragmented datagram (inner MAC %s) reached the VNI", mac)
		}
	}
}
