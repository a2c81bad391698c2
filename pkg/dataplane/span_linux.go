package dataplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/nldump"
)

// spanPort is the node link that makes a bridge interface's network span
// nodes: its VXLAN device or its uplink ("" for a node-local network).
func spanPort(ifc Interface) string {
	switch {
	case ifc.VXLAN != nil:
		return vxlanName(ifc.Bridge)
	case ifc.Uplink != "":
		return ifc.Uplink
	}
	return ""
}

// joinSpan makes a spanning network's VXLAN device or uplink a port of its
// bridge; it is the join of the bridge kind. The caller holds bridgeMu.
func joinSpan(h *netlink.Handle, ifc Interface, br netlink.Link) error {
	switch {
	case ifc.VXLAN != nil:
		if err := ensureVXLAN(h, ifc.Bridge, ifc.VXLAN, ifc.MTU, br); err != nil {
			return fmt.Errorf("vxlan vni %d of bridge %q: %w", ifc.VXLAN.VNI, ifc.Bridge, err)
		}
	case ifc.Uplink != "":
		if err := ensureUplinkPort(h, ifc.Uplink, br); err != nil {
			return fmt.Errorf("uplink %q of bridge %q: %w", ifc.Uplink, ifc.Bridge, err)
		}
	}
	return nil
}

// ensureVXLAN makes the bridge's VXLAN device: adopted when one of its name
// exists with podnet's mark and the same settings (an agent restart keeps
// traffic flowing), replaced when its settings changed, created (marked,
// learning, no IPv6 address, up) when absent; then a port of br with an
// FDB entry for each peer.
func ensureVXLAN(h *netlink.Handle, bridge string, vx *VXLAN, mtu int, br netlink.Link) error {
	name := vxlanName(bridge)
	want, err := vxlanLink(h, name, vx)
	if err != nil {
		return err
	}
	l, err := linkByName(h, name)
	if err != nil {
		return err
	}
	if l != nil && l.Attrs().Alias != vxlanAlias {
		return fmt.Errorf("node link %q is not podnet's vxlan device and is left alone", name)
	}
	if l != nil && !sameVXLAN(l, want) {
		if err := ignore(h.LinkDel(l), unix.ENODEV); err != nil {
			return fmt.Errorf("replace device %q of other settings: %w", name, err)
		}
		l = nil
	}
	if l == nil {
		if l, err = createVXLAN(h, want); err != nil {
			return err
		}
	}
	if l.Attrs().MasterIndex != br.Attrs().Index {
		if err := h.LinkSetMasterByIndex(l, br.Attrs().Index); err != nil {
			return fmt.Errorf("device %q into the bridge: %w", name, err)
		}
	}
	// The bridge drops a frame larger than the port it goes out of, and
	// without an underlay interface the kernel gives the device 1500: it
	// takes the pod's MTU when that is larger (the policy keeps the pod's
	// MTU within the underlay's minus the overhead).
	if l.Attrs().MTU < mtu {
		if err := h.LinkSetMTU(l, mtu); err != nil {
			return fmt.Errorf("device %q mtu %d: %w", name, mtu, err)
		}
	}
	if l.Attrs().Flags&net.FlagUp == 0 {
		if err := h.LinkSetUp(l); err != nil {
			return fmt.Errorf("device %q up: %w", name, err)
		}
	}
	return syncFDB(h, l, vx.Peers, false)
}

// vxlanLink is the device the settings ask for.
func vxlanLink(h *netlink.Handle, name string, vx *VXLAN) (*netlink.Vxlan, error) {
	attrs := netlink.NewLinkAttrs()
	attrs.Name = name
	want := &netlink.Vxlan{LinkAttrs: attrs, VxlanId: vx.VNI, Port: vxlanPort(vx), Learning: true, SrcAddr: canonicalIP(vx.Local)}
	if vx.Dev != "" {
		dev, err := h.LinkByName(vx.Dev)
		if err != nil {
			return nil, fmt.Errorf("underlay interface %q: %w", vx.Dev, err)
		}
		want.VtepDevIndex = dev.Attrs().Index
	}
	return want, nil
}

// sameVXLAN compares what podnet sets of a VXLAN device.
func sameVXLAN(l netlink.Link, want *netlink.Vxlan) bool {
	v, ok := l.(*netlink.Vxlan)
	return ok && v.VxlanId == want.VxlanId && v.Port == want.Port && v.Learning == want.Learning &&
		v.VtepDevIndex == want.VtepDevIndex && canonicalIP(v.SrcAddr).Equal(want.SrcAddr)
}

// createVXLAN creates, marks and readies a VXLAN device.
func createVXLAN(h *netlink.Handle, want *netlink.Vxlan) (netlink.Link, error) {
	name := want.Name
	if err := h.LinkAdd(want); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("create device %q: vni %d or the name is taken by a link podnet did not create: %w", name, want.VxlanId, err)
		}
		return nil, fmt.Errorf("create device %q: %w", name, explainNotSupported(err, "vxlan"))
	}
	l, err := h.LinkByName(name)
	if err != nil {
		return nil, fmt.Errorf("device %q: %w", name, err)
	}
	if err := h.LinkSetAlias(l, vxlanAlias); err != nil {
		return nil, fmt.Errorf("mark device %q: %w", name, err)
	}
	// No IPv6 link-local: a pod on the bridge must not reach the node
	// through it.
	if err := h.LinkSetIP6AddrGenMode(l, nl.IN6_ADDR_GEN_MODE_NONE); err != nil {
		return nil, fmt.Errorf("device %q: turn off IPv6 address generation: %w", name, err)
	}
	return l, nil
}

// zeroMAC is the FDB address of head-end replication: broadcast, unknown
// unicast and multicast go to every remote of this address.
var zeroMAC = net.HardwareAddr{0, 0, 0, 0, 0, 0}

// peerEntry is the all-zeros FDB entry of one peer.
func peerEntry(l netlink.Link, peer net.IP) *netlink.Neigh {
	return &netlink.Neigh{
		LinkIndex: l.Attrs().Index, Family: unix.AF_BRIDGE, State: netlink.NUD_PERMANENT | netlink.NUD_NOARP,
		Flags: netlink.NTF_SELF, IP: peer, HardwareAddr: zeroMAC,
	}
}

// syncFDB adds the all-zeros entries of peers that are missing and, when
// exact, removes those of other peers; entries that stay are not touched,
// so traffic to them goes on.
func syncFDB(h *netlink.Handle, l netlink.Link, peers []net.IP, exact bool) error {
	have, err := fdbPeers(h, l)
	if err != nil {
		return fmt.Errorf("device %q: read fdb: %w", l.Attrs().Name, err)
	}
	want := map[string]net.IP{}
	for _, p := range peers {
		ip := canonicalIP(p)
		want[ip.String()] = ip
	}
	var errs []error
	for key, ip := range want {
		if _, ok := have[key]; ok {
			continue
		}
		if err := h.NeighAppend(peerEntry(l, ip)); err != nil && !errors.Is(err, unix.EEXIST) {
			errs = append(errs, fmt.Errorf("device %q: add peer %s: %w", l.Attrs().Name, ip, err))
		}
	}
	for key, ip := range have {
		if _, ok := want[key]; ok || !exact {
			continue
		}
		if err := ignore(h.NeighDel(peerEntry(l, ip)), unix.ENOENT); err != nil {
			errs = append(errs, fmt.Errorf("device %q: remove peer %s: %w", l.Attrs().Name, ip, err))
		}
	}
	return errors.Join(errs...)
}

// fdbPeers reads the remotes of a VXLAN device's all-zeros FDB entries.
func fdbPeers(h *netlink.Handle, l netlink.Link) (map[string]net.IP, error) {
	entries, err := nldump.Neighs(h, l.Attrs().Index, unix.AF_BRIDGE)
	if err != nil {
		return nil, err
	}
	out := map[string]net.IP{}
	for _, e := range entries {
		if e.LinkIndex != l.Attrs().Index || e.IP == nil || !bytes.Equal(e.HardwareAddr, zeroMAC) {
			continue
		}
		ip := canonicalIP(e.IP)
		out[ip.String()] = ip
	}
	return out, nil
}

// SyncPeers makes the all-zeros FDB entries of the VXLAN device of bridge
// exactly peers, touching only entries that change; no device is no error
// (no pod of that network on this node).
func (d *Dataplane) SyncPeers(ctx context.Context, bridge string, peers []net.IP) error {
	if err := validateLinkName(bridge); err != nil {
		return fmt.Errorf("sync peers: bridge: %w", err)
	}
	if err := validatePeers(peers, 0); err != nil {
		return fmt.Errorf("sync peers of bridge %q: %w", bridge, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	host, _, err := d.hostHandle()
	if err != nil {
		return err
	}
	// The device is not deleted meanwhile: that happens under bridgeMu.
	d.bridgeMu.Lock()
	defer d.bridgeMu.Unlock()
	l, err := linkByName(host, vxlanName(bridge))
	if err != nil || l == nil {
		return err
	}
	vx, ok := l.(*netlink.Vxlan)
	if !ok || l.Attrs().Alias != vxlanAlias {
		return fmt.Errorf("sync peers: node link %q is not podnet's vxlan device", l.Attrs().Name)
	}
	family := net.IPv4len
	if vx.SrcAddr != nil {
		family = len(canonicalIP(vx.SrcAddr))
	}
	if err := validatePeers(peers, family); err != nil {
		return fmt.Errorf("sync peers of bridge %q: %w", bridge, err)
	}
	if err := syncFDB(host, l, peers, true); err != nil {
		return fmt.Errorf("sync peers of bridge %q: %w", bridge, err)
	}
	return nil
}

// ensureUplinkPort makes a host interface a port of br, refusing one the
// node uses: with an address (but IPv6 link-local) or the default route, it
// would cut the node off.
func ensureUplinkPort(h *netlink.Handle, name string, br netlink.Link) error {
	l, err := h.LinkByName(name)
	if err != nil {
		return fmt.Errorf("find it on the node: %w", err)
	}
	a := l.Attrs()
	if a.MasterIndex != br.Attrs().Index {
		if a.MasterIndex != 0 {
			return fmt.Errorf("refused: it is already a port of another link (ifindex %d)", a.MasterIndex)
		}
		if err := checkUplinkUnused(h, l); err != nil {
			return fmt.Errorf("refused, so as not to cut the node off: %w", err)
		}
		if err := h.LinkSetMasterByIndex(l, br.Attrs().Index); err != nil {
			return fmt.Errorf("into the bridge: %w", err)
		}
	}
	if a.Flags&net.FlagUp == 0 {
		if err := h.LinkSetUp(l); err != nil {
			return fmt.Errorf("up: %w", err)
		}
	}
	return nil
}

// checkUplinkUnused refuses an interface with an address other than IPv6
// link-local, or through which a default route of the node goes.
func checkUplinkUnused(h *netlink.Handle, l netlink.Link) error {
	addrs, err := nldump.Addrs(h, l, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("read its addresses: %w", err)
	}
	for _, a := range addrs {
		if a.IP.To4() == nil && a.IP.IsLinkLocalUnicast() {
			continue
		}
		return fmt.Errorf("it carries address %s", a.IPNet)
	}
	routes, err := nldump.Retry(func() ([]netlink.Route, error) {
		return h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	})
	if err != nil {
		return fmt.Errorf("read the node's routes: %w", err)
	}
	idx := l.Attrs().Index
	for _, r := range routes {
		if r.Dst != nil {
			if ones, _ := r.Dst.Mask.Size(); ones != 0 {
				continue
			}
		}
		via := r.LinkIndex == idx
		for _, nh := range r.MultiPath {
			via = via || nh.LinkIndex == idx
		}
		if via {
			return errors.New("the node's default route goes through it")
		}
	}
	return nil
}
