package dataplane

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/nldump"
	"podnet.io/podnet/test/l2frame"
)

// addrsOf lists the IPv6 addresses of link in the named netns, with their
// flags.
func addrsOf(t *testing.T, ns, link string) []netlink.Addr {
	t.Helper()
	// With retries: the kernel cuts a dump short while duplicate
	// address detection changes the addresses it walks.
	addrs, err := nldump.Addrs(handle(t, ns), mustLink(t, ns, link), netlink.FAMILY_V6)
	if err != nil {
		t.Fatal(err)
	}
	return addrs
}

// advertise sends, from the router's link rt0 in netns ns, a router
// advertisement of prefix every 100 ms until the test ends.
func advertise(t *testing.T, ns string, prefix net.IP) {
	t.Helper()
	l := mustLink(t, ns, "rt0")
	var ll net.IP
	eventually(t, "router link-local address", func() bool {
		for _, a := range addrsOf(t, ns, "rt0") {
			if a.IP.IsLinkLocalUnicast() && a.Flags&unix.IFA_F_TENTATIVE == 0 {
				ll = a.IP
				return true
			}
		}
		return false
	})
	h, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	fd := -1
	if err := inNetNS(h, func() error {
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	frame := l2frame.Eth(l2frame.AllNodes, l.Attrs().HardwareAddr, unix.ETH_P_IPV6, l2frame.RA(ll, l.Attrs().HardwareAddr, 1500, prefix))
	sa := &unix.SockaddrLinklayer{Ifindex: l.Attrs().Index}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			_ = unix.Sendto(fd, frame, 0, sa)
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(done); <-stopped; unix.Close(fd) })
}

// TestRootSLAAC: an interface that asks for SLAAC on a network whose
// router advertises a prefix is applied once it has the address the
// kernel makes from it, reports it, and may send from it through its
// port security; a second Apply neither plans a step nor removes it. An
// interface that takes router advertisements without asking for SLAAC
// keeps the kernel's address too, but port security does not let it
// send from it. Without a router, SLAAC fails the interface by name.
func TestRootSLAAC(t *testing.T) {
	d, node := newNode(t)
	const br = "pnbr-ra"
	run(t, "ip", "-n", node, "link", "add", br, "type", "bridge")
	run(t, "ip", "-n", node, "link", "set", br, "up")
	router, _ := newNetNS(t, "router")
	run(t, "ip", "-n", node, "link", "add", "rtp", "type", "veth", "peer", "name", "rt0", "netns", router)
	run(t, "ip", "-n", node, "link", "set", "rtp", "master", br, "up")
	run(t, "ip", "-n", router, "addr", "add", "fd00:72::1/64", "dev", "rt0", "nodad")
	run(t, "ip", "-n", router, "link", "set", "rt0", "up")
	advertise(t, router, net.ParseIP("fd00:72::"))

	ctx := context.Background()
	pod := func(slaac bool) (string, Pod) {
		name, p := newPod(t)
		p.Interfaces = []Interface{{Name: "net1", Kind: KindBridge, Bridge: br, AcceptRA: true, SLAAC: slaac,
			Addresses: []net.IPNet{cidr(t, "192.168.72.2/24")}}}
		return name, p
	}
	nsA, a := pod(true)
	st, err := d.Apply(ctx, a)
	if err != nil || len(st) != 1 || !slices.ContainsFunc(st[0].IPs, func(ip string) bool { return strings.HasPrefix(ip, "fd00:72::") }) {
		t.Fatalf("SLAAC interface: %+v, %v; want its address in fd00:72::/64 reported", st, err)
	}
	if !ping(t, nsA, "fd00:72::1") {
		t.Fatal("the SLAAC interface cannot reach the router from its address: port security drops it")
	}
	requireNoSteps(t, d, a)
	again, err := d.Apply(ctx, a)
	if err != nil || !slices.Equal(again[0].IPs, st[0].IPs) {
		t.Fatalf("second Apply: %+v, %v; want the same addresses %v", again, err, st[0].IPs)
	}

	nsB, b := pod(false)
	b.Interfaces[0].Addresses = []net.IPNet{cidr(t, "192.168.72.3/24")}
	apply(t, d, b)
	eventually(t, "the kernel's address from the advertisement on pod B", func() bool {
		for _, ad := range addrsOf(t, nsB, "net1") {
			if strings.HasPrefix(ad.IP.String(), "fd00:72::") && ad.Flags&unix.IFA_F_TENTATIVE == 0 {
				return true
			}
		}
		return false
	})
	apply(t, d, b)
	if !slices.ContainsFunc(addrsOf(t, nsB, "net1"), func(ad netlink.Addr) bool { return strings.HasPrefix(ad.IP.String(), "fd00:72::") }) {
		t.Fatal("an Apply removed the kernel's address from a router advertisement")
	}
	if pingOnce(t, nsB, "fd00:72::1") {
		t.Fatal("an interface that did not ask for SLAAC sent from the kernel's address through its port security")
	}

	// A macvlan interface, whose port security filters its own egress,
	// with a router on the same parent.
	parent := addParent(t, node, "eth1")
	mvRouter, _ := newNetNS(t, "mvrouter")
	run(t, "ip", "-n", node, "link", "add", "rt0", "link", parent, "type", "macvlan", "mode", "bridge")
	run(t, "ip", "-n", node, "link", "set", "rt0", "netns", mvRouter)
	run(t, "ip", "-n", mvRouter, "addr", "add", "fd00:75::1/64", "dev", "rt0", "nodad")
	run(t, "ip", "-n", mvRouter, "link", "set", "rt0", "up")
	advertise(t, mvRouter, net.ParseIP("fd00:75::"))
	_, m := newPod(t)
	m.Interfaces = []Interface{{Name: "net1", Kind: KindMacvlan, Master: parent, AcceptRA: true, SLAAC: true,
		Addresses: []net.IPNet{cidr(t, "192.168.75.2/24")}}}
	mst, err := d.Apply(ctx, m)
	if err != nil || len(mst) != 1 || len(mst[0].IPs) != 2 {
		t.Fatalf("SLAAC macvlan interface: %+v, %v", mst, err)
	}
	if addr := strings.Split(mst[0].IPs[1], "/")[0]; !ping(t, mvRouter, addr) {
		t.Fatalf("the router cannot reach the SLAAC macvlan interface at %s: its egress filter drops the answers", addr)
	}

	_, c := pod(true)
	c.Interfaces[0].Bridge = "pnbr-nora"
	c.Interfaces[0].Addresses = []net.IPNet{cidr(t, "192.168.73.2/24")}
	_, err = d.Apply(ctx, c)
	var se *SLAACError
	if !errors.As(err, &se) || se.Interface != "net1" {
		t.Fatalf("SLAAC without a router: %v", err)
	}
}
