package localcluster

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/nldump"
)

// ensureNetwork creates the cluster's namespaces and links. Everything it
// touches lives inside those namespaces; the machine's own netns only sees
// the named bind mounts under /var/run/netns.
func ensureNetwork(l layout) error {
	for _, n := range l.Nodes {
		if err := ensureNetNS(n.NetNS); err != nil {
			return err
		}
	}
	h, err := handleAt(l.NetNS)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := ensureUp(h, "lo", l.NetNS); err != nil {
		return err
	}
	// A port-less bridge carries node 1's address so it exists with or
	// without a second node (these kernels have no dummy driver, and an
	// empty bridge has carrier). The default route over it gives kubelet
	// and kube-proxy the "default interface" they look for, and keeps
	// what has no better route inside the namespace.
	hostIf := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: l.HostIf}}
	if err := h.LinkAdd(hostIf); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("add bridge %q in netns %q: %w", l.HostIf, l.NetNS, err)
	}
	if err := ensureAddr(h, l.HostIf, netip.PrefixFrom(l.Nodes[0].IP, 24), l.NetNS); err != nil {
		return err
	}
	if err := ensureUp(h, l.HostIf, l.NetNS); err != nil {
		return err
	}
	link, err := h.LinkByName(l.HostIf)
	if err != nil {
		return fmt.Errorf("find %q in netns %q: %w", l.HostIf, l.NetNS, err)
	}
	if err := h.RouteReplace(&netlink.Route{LinkIndex: link.Attrs().Index, Scope: netlink.SCOPE_LINK, Dst: prefixToIPNet(defaultRoute)}); err != nil {
		return fmt.Errorf("add default route over %q in netns %q: %w", l.HostIf, l.NetNS, err)
	}
	if err := enableForwarding(l.NetNS); err != nil {
		return err
	}
	if len(l.Nodes) == 1 {
		return nil
	}
	if err := ensureNodeLink(h, l, l.Nodes[0], l.Nodes[1]); err != nil {
		return err
	}
	return ensureDataLink(l.Nodes[0], l.Nodes[1])
}

// ensureDataLink joins the data NICs of nodes a and b with a veth created
// directly with its peer in b's netns. Both ends stay without addresses:
// IPv6 address generation is off before they come up, so not even a
// link-local address appears, and an uplink check that refuses to enslave
// an interface carrying addresses accepts them as it would a real data NIC.
func ensureDataLink(a, b nodeLayout) error {
	ha, err := handleAt(a.NetNS)
	if err != nil {
		return err
	}
	defer ha.Close()
	if err := ensureVethAcross(ha, a.NetNS, a.DataIf, b.NetNS, b.DataIf); err != nil {
		return err
	}
	hb, err := handleAt(b.NetNS)
	if err != nil {
		return err
	}
	defer hb.Close()
	for _, side := range []struct {
		h    *netlink.Handle
		node nodeLayout
	}{{ha, a}, {hb, b}} {
		link, err := side.h.LinkByName(side.node.DataIf)
		if err != nil {
			return fmt.Errorf("find data NIC %q in netns %q: %w", side.node.DataIf, side.node.NetNS, err)
		}
		if link.Type() != "veth" {
			return fmt.Errorf("data NIC %q in netns %q is a %s, want a veth", side.node.DataIf, side.node.NetNS, link.Type())
		}
		if err := side.h.LinkSetIP6AddrGenMode(link, addrGenModeNone); err != nil {
			return fmt.Errorf("turn off IPv6 address generation on %q in netns %q: %w", side.node.DataIf, side.node.NetNS, err)
		}
		if err := side.h.LinkSetUp(link); err != nil {
			return fmt.Errorf("set %q up in netns %q: %w", side.node.DataIf, side.node.NetNS, err)
		}
	}
	return nil
}

// ensureVethAcross creates veth name in netns nsA (through ha) with its
// peer created directly in netns nsB; one that exists is kept.
func ensureVethAcross(ha *netlink.Handle, nsA, name, nsB, peer string) error {
	peerNS, err := netns.GetFromName(nsB)
	if err != nil {
		return fmt.Errorf("open netns %q: %w", nsB, err)
	}
	defer peerNS.Close()
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: name},
		PeerName:      peer,
		PeerNamespace: netlink.NsFd(int(peerNS)),
	}
	if err := ha.LinkAdd(veth); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("add veth %q (peer %q in netns %q) in netns %q: %w", name, peer, nsB, nsA, err)
	}
	return nil
}

// addrGenModeNone is IN6_ADDR_GEN_MODE_NONE: no automatic IPv6 address.
const addrGenModeNone = 1

// removeDataLink deletes node a's data NIC, and with it its veth peer in
// the other node's netns; absent (a 1-node cluster, a netns already gone,
// a second run) is success.
func removeDataLink(a nodeLayout) error {
	if a.DataIf == "" {
		return nil
	}
	if _, err := os.Stat(netnsPath(a.NetNS)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	h, err := handleAt(a.NetNS)
	if err != nil {
		return err
	}
	defer h.Close()
	link, err := h.LinkByName(a.DataIf)
	if errors.As(err, new(netlink.LinkNotFoundError)) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("find data NIC %q in netns %q: %w", a.DataIf, a.NetNS, err)
	}
	if err := h.LinkDel(link); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("delete data NIC %q in netns %q: %w", a.DataIf, a.NetNS, err)
	}
	return nil
}

// ensureNodeLink joins node b's netns to node a's (the cluster netns) with
// a veth created directly with its peer in b's netns, then routes each
// node's pod CIDR to the other node, host-gw style.
func ensureNodeLink(ha *netlink.Handle, l layout, a, b nodeLayout) error {
	if err := ensureVethAcross(ha, a.NetNS, a.LinkIf, b.NetNS, b.LinkIf); err != nil {
		return err
	}
	hb, err := handleAt(b.NetNS)
	if err != nil {
		return err
	}
	defer hb.Close()
	if err := ensureUp(hb, "lo", b.NetNS); err != nil {
		return err
	}
	for _, side := range []struct {
		h    *netlink.Handle
		node nodeLayout
		via  netip.Addr
		dst  netip.Prefix
	}{
		{ha, a, b.LinkIP, b.PodCIDR},
		// Node b sends everything else to the cluster netns: node 1, its
		// pods and Service ClusterIPs (which kube-proxy rewrites locally,
		// but only after a route was found).
		{hb, b, a.LinkIP, defaultRoute},
	} {
		if err := ensureAddr(side.h, side.node.LinkIf, netip.PrefixFrom(side.node.LinkIP, l.LinkCIDR.Bits()), side.node.NetNS); err != nil {
			return err
		}
		if err := ensureUp(side.h, side.node.LinkIf, side.node.NetNS); err != nil {
			return err
		}
		r := &netlink.Route{Gw: net.IP(side.via.AsSlice()), Dst: prefixToIPNet(side.dst)}
		if err := side.h.RouteReplace(r); err != nil {
			return fmt.Errorf("add route to %v via %v in netns %q: %w", side.dst, side.via, side.node.NetNS, err)
		}
	}
	return enableForwarding(b.NetNS)
}

var defaultRoute = netip.MustParsePrefix("0.0.0.0/0")

func prefixToIPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// ensureNetNS creates a named netns unless it exists. iproute2 does the
// bind mount under /var/run/netns exactly as containerd expects to see it.
func ensureNetNS(name string) error {
	if _, err := os.Stat(netnsPath(name)); err == nil {
		return nil
	}
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return fmt.Errorf("create netns %q: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// deleteNetNS unmounts and removes a named netns; absent is success.
func deleteNetNS(name string) error {
	if _, err := os.Lstat(netnsPath(name)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := netns.DeleteNamed(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete netns %q: %w", name, err)
	}
	return nil
}

func handleAt(nsName string) (*netlink.Handle, error) {
	ns, err := netns.GetFromPath(netnsPath(nsName))
	if err != nil {
		return nil, fmt.Errorf("open netns %q: %w", nsName, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("netlink handle in netns %q: %w", nsName, err)
	}
	return h, nil
}

func ensureUp(h *netlink.Handle, ifName, nsName string) error {
	link, err := h.LinkByName(ifName)
	if err != nil {
		return fmt.Errorf("find %q in netns %q: %w", ifName, nsName, err)
	}
	if err := h.LinkSetUp(link); err != nil {
		return fmt.Errorf("set %q up in netns %q: %w", ifName, nsName, err)
	}
	return nil
}

func ensureAddr(h *netlink.Handle, ifName string, p netip.Prefix, nsName string) error {
	link, err := h.LinkByName(ifName)
	if err != nil {
		return fmt.Errorf("find %q in netns %q: %w", ifName, nsName, err)
	}
	addr := &netlink.Addr{IPNet: prefixToIPNet(p)}
	if err := h.AddrReplace(link, addr); err != nil {
		return fmt.Errorf("add %v to %q in netns %q: %w", p, ifName, nsName, err)
	}
	return nil
}

// enableForwarding turns on IPv4 forwarding in one netns (the setting is
// per namespace, so the machine's own stays as it is). /proc/sys/net shows
// the namespace of whoever opens it, hence nsenter.
func enableForwarding(nsName string) error {
	cmd := exec.Command("nsenter", "--net="+netnsPath(nsName), "--", "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("enable forwarding in netns %q: %w: %s", nsName, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// cniNetNSOwned reports whether a pod netns made by containerd belongs to
// this cluster: its interfaces hold an address from the cluster's pod
// range, which no other running cluster uses.
func cniNetNSOwned(path string, cluster netip.Prefix) bool {
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return false
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return false
	}
	defer h.Close()
	addrs, err := nldump.Addrs(h, nil, netlink.FAMILY_V4)
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP.To4()); ok && cluster.Contains(ip) {
			return true
		}
	}
	return false
}
