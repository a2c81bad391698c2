package dataplane

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// Where a tunnel's UDP socket lives. Both WireGuard and VXLAN devices open
// their socket in the netns the device was created *from*, not the one it
// sits in: the kernel hands rtnl_newlink's source netns (that of the
// netlink socket that asked) to the driver, which keeps it (wg_newlink's
// creating_net, vxlan's vxlan->net) and opens the socket there when the
// device goes up; moving the device later keeps that netns too. The
// executor creates pod links through the node's netlink handle with the
// pod's netns as the target (IFLA_NET_NS_FD), so a tunnel device is born
// in the pod and its socket on the node in one step: the encrypted or
// encapsulated packets leave by the node's routes (and the VXLAN underlay
// interface is looked up on the node), while the pod sees only the inner
// interface. That is the same as creating it on the node and moving it,
// without the move's RCU barrier and without the device ever being
// visible on the node. TestRootWireGuardTunnel and TestRootVXLANTunnel
// prove it: the pod netns has no route to the far end, only the node has.

// vxlanTunnelLink is a VXLAN device with one fixed remote, no learning:
// it sends every frame to the remote and never to anyone else.
func vxlanTunnelLink(s *session, ifc Interface, attrs netlink.LinkAttrs) (netlink.Link, error) {
	t := ifc.Tunnel
	vx := &netlink.Vxlan{
		LinkAttrs: attrs, VxlanId: t.VNI, Group: net.IP(t.Remote.Addr().AsSlice()), Port: int(t.Remote.Port()),
		SrcAddr: t.Local, Learning: false,
	}
	if t.Dev != "" {
		dev, err := s.host.LinkByName(t.Dev)
		if err != nil {
			return nil, fmt.Errorf("tunnel underlay interface %q: %w", t.Dev, err)
		}
		vx.VtepDevIndex = dev.Attrs().Index
	}
	return vx, nil
}

// vxlanTunnelDuplicate words the node's VXLAN device that a refused
// tunnel duplicates: the kernel keeps one per port, VNI and family in the
// netns of its socket, the node's, whichever netns the device sits in.
func vxlanTunnelDuplicate(ifc Interface) string {
	return fmt.Sprintf("the node already has a vxlan device of port %d and vni %d (a spanning network's or another pod's tunnel; "+
		"the kernel allows one per port and vni)", ifc.Tunnel.Remote.Port(), ifc.Tunnel.VNI)
}

// readVXLANTunnel reads a VXLAN tunnel's remote, VNI and node side.
func readVXLANTunnel(_ *session, l netlink.Link) (*TunnelState, error) {
	vx, ok := l.(*netlink.Vxlan)
	if !ok {
		return nil, fmt.Errorf("link %q: not a vxlan device", l.Attrs().Name)
	}
	ts := &TunnelState{VNI: vx.VxlanId, Local: vx.SrcAddr, DevIndex: vx.VtepDevIndex}
	if a, ok := netip.AddrFromSlice(vx.Group); ok {
		ts.Remote = netip.AddrPortFrom(a.Unmap(), uint16(vx.Port))
	}
	return ts, nil
}

// wireGuardLink is a bare WireGuard device; configureWireGuard gives it
// its key pair and peer before it goes up.
func wireGuardLink(_ *session, _ Interface, attrs netlink.LinkAttrs) (netlink.Link, error) {
	return &netlink.Wireguard{LinkAttrs: attrs}, nil
}

// configureWireGuard gives the pod's WireGuard device its peer and, when
// it has none yet, a private key made here: the key exists only in the
// kernel device inside the pod's netns, where only a holder of
// CAP_NET_ADMIN over that netns (the agent, not the pod) can read it, and
// it never leaves the node. The peer is replaced in place, so the pod keeps
// its key pair when the tenant changes the peer.
func (s *session) configureWireGuard(ifc Interface) error {
	t := ifc.Tunnel
	peerKey, err := wgtypes.ParseKey(t.PeerPublicKey)
	if err != nil {
		return fmt.Errorf("peer public key: %w", err)
	}
	peer := wgtypes.PeerConfig{
		PublicKey: peerKey, ReplaceAllowedIPs: true, AllowedIPs: t.AllowedIPs,
		Endpoint: &net.UDPAddr{IP: t.Remote.Addr().AsSlice(), Port: int(t.Remote.Port())},
	}
	return withWireGuard(s.podNS, func(c *wgctrl.Client) error {
		dev, err := c.Device(ifc.Name)
		if err != nil {
			return fmt.Errorf("read wireguard device: %w", err)
		}
		cfg := wgtypes.Config{ReplacePeers: true, Peers: []wgtypes.PeerConfig{peer}}
		if dev.PrivateKey == (wgtypes.Key{}) {
			key, err := wgtypes.GeneratePrivateKey()
			if err != nil {
				return fmt.Errorf("make the key pair: %w", err)
			}
			cfg.PrivateKey = &key
		}
		dev.PrivateKey = wgtypes.Key{}
		if err := c.ConfigureDevice(ifc.Name, cfg); err != nil {
			return fmt.Errorf("configure wireguard device: %w", err)
		}
		return nil
	})
}

// readWireGuard reads the pod's public key and the peer back from the
// device: after an agent restart the public key is the device's, never a
// new one. The private key the kernel returns with them is dropped here.
func readWireGuard(s *session, l netlink.Link) (*TunnelState, error) {
	ts := &TunnelState{}
	err := withWireGuard(s.podNS, func(c *wgctrl.Client) error {
		dev, err := c.Device(l.Attrs().Name)
		if err != nil {
			return err
		}
		if dev.PrivateKey != (wgtypes.Key{}) {
			ts.PublicKey = dev.PublicKey.String()
		}
		dev.PrivateKey = wgtypes.Key{}
		if len(dev.Peers) != 1 {
			return nil
		}
		p := dev.Peers[0]
		ts.PeerPublicKey, ts.AllowedIPs = p.PublicKey.String(), p.AllowedIPs
		if p.Endpoint != nil {
			ap := p.Endpoint.AddrPort()
			ts.Remote = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read wireguard device %q: %w", l.Attrs().Name, err)
	}
	return ts, nil
}

// withWireGuard runs f with a WireGuard client whose generic netlink
// socket is in ns. wgctrl opens its socket in the calling thread's netns
// and takes no netns of its own, so f runs in inNetNS.
func withWireGuard(ns netns.NsHandle, f func(*wgctrl.Client) error) error {
	return inNetNS(ns, func() error {
		c, err := wgctrl.New()
		if err != nil {
			return fmt.Errorf("wireguard client: %w", err)
		}
		return errors.Join(f(c), c.Close())
	})
}
