package portsecurity

import (
	"net"
	"slices"
	"testing"
	"time"

	"github.com/google/nftables"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"podnet.io/podnet/pkg/nldump"
	"podnet.io/podnet/test/l2frame"
	"podnet.io/podnet/test/netnstest"
)

// frameCase is one frame a pod sends, built from its own identity (self)
// and another pod's (victim), and whether a secured port forwards it.
type frameCase struct {
	name   string
	frame  func(self, victim, obs *pod) []byte
	passes bool
}

var frameCases = []frameCase{
	{"ipv4 from own mac and address", func(s, v, o *pod) []byte {
		return l2frame.Eth(o.mac, s.mac, unix.ETH_P_IP, l2frame.UDP4(s.ip4, o.ip4, []byte("x")))
	}, true},
	{"spoofed source mac", func(s, v, o *pod) []byte {
		return l2frame.Eth(o.mac, v.mac, unix.ETH_P_IP, l2frame.UDP4(s.ip4, o.ip4, []byte("x")))
	}, false},
	{"spoofed ipv4 source", func(s, v, o *pod) []byte {
		return l2frame.Eth(o.mac, s.mac, unix.ETH_P_IP, l2frame.UDP4(v.ip4, o.ip4, []byte("x")))
	}, false},
	{"arp request", func(s, v, o *pod) []byte {
		return l2frame.Eth(l2frame.Broadcast, s.mac, unix.ETH_P_ARP, l2frame.ARP(1, s.mac, s.ip4, make(net.HardwareAddr, 6), o.ip4))
	}, true},
	{"arp probe from 0.0.0.0", func(s, v, o *pod) []byte {
		return l2frame.Eth(l2frame.Broadcast, s.mac, unix.ETH_P_ARP, l2frame.ARP(1, s.mac, net.IPv4zero, make(net.HardwareAddr, 6), s.ip4))
	}, true},
	{"gratuitous arp for another pod's address", func(s, v, o *pod) []byte {
		return l2frame.Eth(l2frame.Broadcast, s.mac, unix.ETH_P_ARP, l2frame.ARP(1, s.mac, v.ip4, l2frame.Broadcast, v.ip4))
	}, false},
	{"arp reply with another pod's sender mac", func(s, v, o *pod) []byte {
		return l2frame.Eth(o.mac, s.mac, unix.ETH_P_ARP, l2frame.ARP(2, v.mac, s.ip4, o.mac, o.ip4))
	}, false},
	{"arp of another hardware type", func(s, v, o *pod) []byte {
		b := l2frame.ARP(1, s.mac, s.ip4, make(net.HardwareAddr, 6), o.ip4)
		b[1] = 6 // IEEE 802
		return l2frame.Eth(l2frame.Broadcast, s.mac, unix.ETH_P_ARP, b)
	}, false},
	{"vlan-tagged frame", func(s, v, o *pod) []byte {
		return l2frame.Tagged(l2frame.Broadcast, s.mac, 1, unix.ETH_P_IP, l2frame.UDP4(v.ip4, net.IPv4bcast, []byte("x")))
	}, false},
	{"icmpv6 echo from own address", func(s, v, o *pod) []byte {
		return l2frame.Eth(o.mac, s.mac, unix.ETH_P_IPV6, l2frame.ICMP6(s.ip6, o.ip6, 128, []byte{0, 1, 0, 1}))
	}, true},
	{"icmpv6 echo from own link-local", func(s, v, o *pod) []byte {
		return l2frame.Eth(o.mac, s.mac, unix.ETH_P_IPV6, l2frame.ICMP6(s.linkLocal(), o.linkLocal(), 128, []byte{0, 1, 0, 1}))
	}, true},
	{"spoofed ipv6 source", func(s, v, o *pod) []byte {
		return l2frame.Eth(o.mac, s.mac, unix.ETH_P_IPV6, l2frame.ICMP6(v.ip6, o.ip6, 128, []byte{0, 1, 0, 1}))
	}, false},
	{"spoofed ipv6 link-local source", func(s, v, o *pod) []byte {
		return l2frame.Eth(o.mac, s.mac, unix.ETH_P_IPV6, l2frame.ICMP6(v.linkLocal(), o.linkLocal(), 128, []byte{0, 1, 0, 1}))
	}, false},
	{"neighbour advertisement for own address", func(s, v, o *pod) []byte {
		return l2frame.Eth(l2frame.AllNodes, s.mac, unix.ETH_P_IPV6, l2frame.NA(s.linkLocal(), net.ParseIP("ff02::1"), s.ip6, 0x20, s.mac))
	}, true},
	{"neighbour advertisement overriding another pod's address", func(s, v, o *pod) []byte {
		return l2frame.Eth(l2frame.AllNodes, s.mac, unix.ETH_P_IPV6, l2frame.NA(s.linkLocal(), net.ParseIP("ff02::1"), v.ip6, 0x20, s.mac))
	}, false},
	{"neighbour advertisement with another pod's mac", func(s, v, o *pod) []byte {
		return l2frame.Eth(l2frame.AllNodes, s.mac, unix.ETH_P_IPV6, l2frame.NA(s.linkLocal(), net.ParseIP("ff02::1"), s.ip6, 0x20, v.mac))
	}, false},
	{"neighbour advertisement behind an extension header", func(s, v, o *pod) []byte {
		return l2frame.Eth(l2frame.AllNodes, s.mac, unix.ETH_P_IPV6, l2frame.HopByHop(l2frame.NA(s.linkLocal(), net.ParseIP("ff02::1"), v.ip6, 0x20, s.mac)))
	}, false},
	{"neighbour advertisement with a second option", func(s, v, o *pod) []byte {
		b := l2frame.NA(s.linkLocal(), net.ParseIP("ff02::1"), s.ip6, 0x20, nil)
		return l2frame.Eth(l2frame.AllNodes, s.mac, unix.ETH_P_IPV6, l2frame.AppendND(b, []byte{14, 1, 0, 0, 0, 0, 0, 0}, append([]byte{2, 1}, v.mac...)))
	}, false},
	{"neighbour solicitation from own link-local", func(s, v, o *pod) []byte {
		dst, dmac := l2frame.SolicitedNode(o.ip6)
		return l2frame.Eth(dmac, s.mac, unix.ETH_P_IPV6, l2frame.NS(s.linkLocal(), dst, o.ip6, s.mac))
	}, true},
	{"neighbour solicitation with another pod's mac", func(s, v, o *pod) []byte {
		dst, dmac := l2frame.SolicitedNode(o.ip6)
		return l2frame.Eth(dmac, s.mac, unix.ETH_P_IPV6, l2frame.NS(s.ip6, dst, o.ip6, v.mac))
	}, false},
	{"router advertisement", func(s, v, o *pod) []byte {
		return l2frame.Eth(l2frame.AllNodes, s.mac, unix.ETH_P_IPV6, l2frame.RA(s.linkLocal(), s.mac, 1280, l2frame.RogueRAPrefix))
	}, false},
	{"icmpv6 redirect", func(s, v, o *pod) []byte {
		return l2frame.Eth(o.mac, s.mac, unix.ETH_P_IPV6, l2frame.Redirect6(s.linkLocal(), o.linkLocal(), s.linkLocal(), v.ip6))
	}, false},
	{"icmp redirect", func(s, v, o *pod) []byte {
		return l2frame.Eth(o.mac, s.mac, unix.ETH_P_IP, l2frame.Redirect4(s.ip4, o.ip4, s.ip4, v.ip4))
	}, false},
	{"dhcp offer", func(s, v, o *pod) []byte {
		return l2frame.Eth(l2frame.Broadcast, s.mac, unix.ETH_P_IP, l2frame.DHCPOffer(s.ip4, o.mac))
	}, false},
	{"dhcpv6 advertise", func(s, v, o *pod) []byte {
		return l2frame.Eth(o.mac, s.mac, unix.ETH_P_IPV6, l2frame.DHCP6Advertise(s.linkLocal(), o.linkLocal()))
	}, false},
	{"duplicate address detection from ::", func(s, v, o *pod) []byte {
		target := net.ParseIP("fd00:9::77")
		dst, dmac := l2frame.SolicitedNode(target)
		return l2frame.Eth(dmac, s.mac, unix.ETH_P_IPV6, l2frame.NS(net.IPv6unspecified, dst, target, nil))
	}, true},
}

// routerOnly are the frameCases a router's port forwards.
var routerOnly = map[string]bool{
	"router advertisement": true, "icmpv6 redirect": true, "icmp redirect": true,
	"dhcp offer": true, "dhcpv6 advertise": true,
}

// TestRootPortSecurity puts four pods on one bridge: a, v and o with
// secured ports, u without. Every spoofed frame passes u's port (so each
// frame is one that works) and none passes a's; legitimate traffic passes.
func TestRootPortSecurity(t *testing.T) {
	l := newLAN(t)
	a := l.addPod(t, "a", 1, true)
	v := l.addPod(t, "v", 2, true)
	o := l.addPod(t, "o", 3, true)
	u := l.addPod(t, "u", 4, false)

	t.Run("frames", func(t *testing.T) {
		obs := newSniffer(t, o)
		for _, from := range []*pod{a, u} {
			s := newSender(t, from)
			for _, tc := range frameCases {
				want := tc.passes || from == u
				if got := s.passes(t, obs, tc.frame(from, v, o)); got != want {
					t.Errorf("%s from port %s (secured %v): forwarded = %v, want %v", tc.name, from.port, from != u, got, want)
				}
			}
		}
	})

	t.Run("kernel traffic", func(t *testing.T) {
		for _, to := range []net.IP{o.ip4, o.ip6, o.linkLocal()} {
			if err := ping(t, a, to); err != nil {
				t.Error(err)
			}
		}
		if got := neighMAC(t, o, a.ip4); got.String() != a.mac.String() {
			t.Errorf("o's neighbour entry for %s (ARP) = %s, want %s", a.ip4, got, a.mac)
		}
		if got := neighMAC(t, o, a.ip6); got.String() != a.mac.String() {
			t.Errorf("o's neighbour entry for %s (ND) = %s, want %s", a.ip6, got, a.mac)
		}
	})

	t.Run("neighbour entries stay", func(t *testing.T) {
		// The control frames above taught the pods wrong entries.
		for _, p := range []*pod{a, v, o, u} {
			run(t, "ip", "-n", p.ns, "neigh", "flush", "dev", "eth1")
		}
		for _, ip := range []net.IP{v.ip4, v.ip6} {
			if err := ping(t, o, ip); err != nil {
				t.Fatal(err)
			}
		}
		obs := newSniffer(t, o)
		poison := func(s *pod) {
			snd := newSender(t, s)
			snd.passes(t, obs, l2frame.Eth(l2frame.Broadcast, s.mac, unix.ETH_P_ARP, l2frame.ARP(1, s.mac, v.ip4, l2frame.Broadcast, v.ip4)))
			snd.passes(t, obs, l2frame.Eth(l2frame.AllNodes, s.mac, unix.ETH_P_IPV6, l2frame.NA(s.linkLocal(), net.ParseIP("ff02::1"), v.ip6, 0x20, s.mac)))
		}
		poison(a)
		for _, ip := range []net.IP{v.ip4, v.ip6} {
			if got := neighMAC(t, o, ip); got.String() != v.mac.String() {
				t.Errorf("after a's spoofing, o's neighbour entry for %s = %s, want v's %s", ip, got, v.mac)
			}
		}
		// The same frames from the unsecured port do poison o's table.
		poison(u)
		for _, ip := range []net.IP{v.ip4, v.ip6} {
			if got := neighMAC(t, o, ip); got.String() != u.mac.String() {
				t.Errorf("control: after u's spoofing, o's neighbour entry for %s = %s, want u's %s", ip, got, u.mac)
			}
		}
	})

	t.Run("router port", func(t *testing.T) {
		// v's port declared a router's: what only routers send passes,
		// spoofing is still dropped.
		pl, err := PlanPort(Port{Name: v.port, MAC: v.mac, Addresses: []net.IP{v.ip4, v.ip6}, Router: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.table.Ensure(pl); err != nil {
			t.Fatal(err)
		}
		defer l.secure(t, v, v.ip4, v.ip6)
		s, obs := newSender(t, v), newSniffer(t, o)
		for _, tc := range frameCases {
			want := tc.passes || routerOnly[tc.name]
			if got := s.passes(t, obs, tc.frame(v, a, o)); got != want {
				t.Errorf("%s from router port %s: forwarded = %v, want %v", tc.name, v.port, got, want)
			}
		}
	})

	t.Run("duplicate address detection", func(t *testing.T) {
		// a claims v's address: a's DAD probe from :: crosses a's port,
		// v's answer crosses v's, and a's kernel marks the address failed.
		h := netnstest.Handle(t, a.ns)
		eth1 := linkOf(t, h, "eth1")
		dup := &netlink.Addr{IPNet: &net.IPNet{IP: v.ip6, Mask: net.CIDRMask(64, 128)}}
		if err := h.AddrAdd(eth1, dup); err != nil {
			t.Fatal(err)
		}
		defer h.AddrDel(eth1, dup)
		waitAddrFlag(t, h, eth1, v.ip6, unix.IFA_F_DADFAILED)
	})

	t.Run("address change", func(t *testing.T) {
		s, obs := newSender(t, a), newSniffer(t, o)
		newIP := net.IPv4(10, 9, 0, 101).To4()
		from := func(ip net.IP) []byte {
			return l2frame.Eth(o.mac, a.mac, unix.ETH_P_IP, l2frame.UDP4(ip, o.ip4, []byte("x")))
		}
		if s.passes(t, obs, from(newIP)) {
			t.Fatal("a frame from an address not yet a's passed")
		}
		l.secure(t, a, a.ip4, newIP, a.ip6)
		if !s.passes(t, obs, from(newIP)) {
			t.Error("after adding the address, a frame from it is dropped")
		}
		// The marker is sent from a.ip4, so that one stays too; the old
		// address tested is a.ip6.
		l.secure(t, a, a.ip4, newIP)
		old := l2frame.Eth(o.mac, a.mac, unix.ETH_P_IPV6, l2frame.ICMP6(a.ip6, o.ip6, 128, []byte{0, 1, 0, 1}))
		if s.passes(t, obs, old) {
			t.Error("after removing the address, a frame from it passes")
		}
		pl, err := PlanPort(Port{Name: a.port, MAC: a.mac, Addresses: []net.IP{a.ip4, newIP}})
		if err != nil {
			t.Fatal(err)
		}
		if changed, err := l.table.Ensure(pl); err != nil || changed {
			t.Errorf("ensuring the plan in place again: changed %v, err %v; want nothing written", changed, err)
		}
	})

	t.Run("remove", func(t *testing.T) {
		if err := l.table.Remove(a.port, "pnt-never"); err != nil {
			t.Fatal(err)
		}
		s, obs := newSender(t, a), newSniffer(t, o)
		if !s.passes(t, obs, frameCases[1].frame(a, v, o)) {
			t.Error("after Remove, the port still drops a spoofed frame")
		}
		ports, err := l.table.Ports()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(ports, a.port) || !slices.Contains(ports, v.port) {
			t.Errorf("ports with rules = %v, want v's %s and not a's %s", ports, v.port, a.port)
		}
		if err := l.table.Remove(a.port); err != nil {
			t.Errorf("removing again: %v", err)
		}
	})
}

// waitAddrFlag waits (generously) until the address carries flag.
func waitAddrFlag(t *testing.T, h *netlink.Handle, l netlink.Link, ip net.IP, flag int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		addrs, err := nldump.Addrs(h, l, netlink.FAMILY_V6)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range addrs {
			if a.IP.Equal(ip) && a.Flags&flag != 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("address %s did not get flag %#x within 30s: %v", ip, flag, addrs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRootPortSecurityOwnTableOnly writes and removes port rules next to
// another bridge table and a table of the same name in another family:
// both are left as they were, and Delete removes only podnet's.
func TestRootPortSecurityOwnTableOnly(t *testing.T) {
	l := newLAN(t)
	c, err := nftables.New(nftables.WithNetNSFd(l.table.NetNS))
	if err != nil {
		t.Fatal(err)
	}
	other := c.AddTable(&nftables.Table{Family: nftables.TableFamilyBridge, Name: "other"})
	c.AddChain(&nftables.Chain{Name: "keep", Table: other})
	same := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: TableName})
	c.AddChain(&nftables.Chain{Name: "keep", Table: same})
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	p := l.addPod(t, "a", 1, true)
	if err := l.table.Remove(p.port); err != nil {
		t.Fatal(err)
	}
	l.secure(t, p, p.ip4)
	if err := l.table.Delete(); err != nil {
		t.Fatal(err)
	}
	if err := l.table.Delete(); err != nil {
		t.Errorf("deleting an absent table: %v", err)
	}
	chains, err := c.ListChains()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ch := range chains {
		got = append(got, ch.Table.Name+"/"+ch.Name)
	}
	slices.Sort(got)
	if want := []string{"other/keep", TableName + "/keep"}; !slices.Equal(got, want) {
		t.Errorf("chains after Delete = %v, want %v (the inet table of the same name is not podnet's)", got, want)
	}
	if ports, err := l.table.Ports(); err != nil || len(ports) != 0 {
		t.Errorf("ports after Delete = %v, %v; want none", ports, err)
	}
}
