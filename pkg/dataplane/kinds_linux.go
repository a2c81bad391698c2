package dataplane

import (
	"fmt"

	"github.com/vishvananda/netlink"
)

// linuxKind is the netlink half of a kind's entry in kinds: how its pod link
// is built and read back. Every kind has one entry.
type linuxKind struct {
	// linkType is the netlink type of the pod link.
	linkType string
	// hasPeer: the pod link is a veth, whose parent index is its peer,
	// made by createVeth.
	hasPeer bool
	// podLink builds the pod link of any other kind; attrs carries its
	// name, MTU, MAC, target netns and group.
	podLink func(s *session, ifc Interface, attrs netlink.LinkAttrs) (netlink.Link, error)
	// readMode reads the mode of an observed pod link, in Interface.Mode's
	// words (nil: the kind has none).
	readMode func(netlink.Link) string
	// setMode changes the mode of an existing pod link in place.
	setMode func(h *netlink.Handle, l netlink.Link, mode string) error
	// join makes the kind's own node links ports of br, before the pod's
	// node end joins it (nil: none). The caller holds bridgeMu.
	join func(h *netlink.Handle, ifc Interface, br netlink.Link) error
	// readTunnel reads a tunnel link's far end (nil: not a tunnel).
	readTunnel func(s *session, l netlink.Link) (*TunnelState, error)
	// configure performs OpConfigureTunnel (nil: the kind has none).
	configure func(s *session, ifc Interface) error
	// duplicate words what else the kernel keeps one of that a refused
	// link of the kind duplicates, when not its name (nil: only names).
	duplicate func(ifc Interface) string // take moves an existing node link into the pod instead of creating
	// one (nil: the link is created).
	take func(s *session, ifc Interface) error
}

// linuxKinds is the one home of every kind's netlink facts.
var linuxKinds = map[Kind]linuxKind{
	KindBridge: {linkType: "veth", hasPeer: true, join: joinSpan},
	KindMacvlan: {
		linkType: "macvlan",
		podLink: func(s *session, ifc Interface, attrs netlink.LinkAttrs) (netlink.Link, error) {
			err := s.parentIndex(ifc, &attrs)
			return &netlink.Macvlan{LinkAttrs: attrs, Mode: macvlanMode(ifc.Mode)}, err
		},
		readMode: func(l netlink.Link) string { return macvlanModeNames[l.(*netlink.Macvlan).Mode] },
		setMode: func(h *netlink.Handle, l netlink.Link, mode string) error {
			return h.LinkSetMacvlanMode(l, macvlanMode(mode))
		},
	},
	KindIPVlan: {
		linkType: "ipvlan",
		podLink: func(s *session, ifc Interface, attrs netlink.LinkAttrs) (netlink.Link, error) {
			err := s.parentIndex(ifc, &attrs)
			return &netlink.IPVlan{LinkAttrs: attrs, Mode: ipvlanMode(ifc.Mode)}, err
		},
		readMode: func(l netlink.Link) string { return ipvlanModeNames[l.(*netlink.IPVlan).Mode] },
	},
	KindVLAN: {linkType: "veth", hasPeer: true, join: joinVLAN},
	KindWireGuard: {
		linkType: "wireguard", podLink: wireGuardLink, readTunnel: readWireGuard,
		configure: (*session).configureWireGuard,
	},
	KindVXLANTunnel: {linkType: "vxlan", podLink: vxlanTunnelLink, readTunnel: readVXLANTunnel, duplicate: vxlanTunnelDuplicate},
	// A host device is whatever link the node had; observeTaken knows it
	// by its origin.
	KindHostDevice: {take: (*session).takeDevice},
}

// joinVLAN makes a VLAN network's subinterface the uplink of its bridge.
func joinVLAN(h *netlink.Handle, ifc Interface, br netlink.Link) error {
	if err := ensureUplink(h, ifc, br); err != nil {
		return fmt.Errorf("vlan %d on %q: %w", ifc.VLAN, ifc.Master, err)
	}
	return nil
}

// parentIndex sets the node parent link of a pod link.
func (s *session) parentIndex(ifc Interface, attrs *netlink.LinkAttrs) error {
	parent, err := s.host.LinkByName(ifc.Master)
	if err != nil {
		return fmt.Errorf("parent link %q: %w", ifc.Master, err)
	}
	attrs.ParentIndex = parent.Attrs().Index
	return nil
}
