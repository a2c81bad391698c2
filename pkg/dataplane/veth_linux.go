package dataplane

import (
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// rawSocket is a route socket for requests written here rather than by the
// netlink library, which sends some of them as two or three messages.
type rawSocket = *nl.SocketHandle

// createVeth makes a bridge kind's veth in one request: the node end on the
// node, the pod end straight in the pod's netns (nothing is created on the
// node and moved, which would cost an RCU barrier and briefly show the link
// on the node) and already in podGroup, which the netlink library cannot
// give a veth's peer at creation. One queue pair per end instead of the
// kernel's one per possible CPU: multiqueue veths only help XDP, and the
// per-queue kernel objects make creation several times slower (measured
// 1.4 ms against 0.5 ms on two CPUs; more on big nodes).
func (s *session) createVeth(ifc Interface) error {
	req := s.hostRequest(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(hostName(s.uid, ifc.Name))))
	req.AddData(nl.NewRtAttr(unix.IFLA_NUM_TX_QUEUES, nl.Uint32Attr(1)))
	req.AddData(nl.NewRtAttr(unix.IFLA_NUM_RX_QUEUES, nl.Uint32Attr(1)))
	if ifc.MTU > 0 {
		req.AddData(nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(uint32(ifc.MTU))))
	}
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("veth"))
	peer := info.AddRtAttr(nl.IFLA_INFO_DATA, nil).AddRtAttr(nl.VETH_INFO_PEER, nil)
	nl.NewIfInfomsgChild(peer, unix.AF_UNSPEC)
	peer.AddRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(ifc.Name))
	peer.AddRtAttr(unix.IFLA_NET_NS_FD, nl.Uint32Attr(uint32(s.podNS)))
	peer.AddRtAttr(unix.IFLA_GROUP, nl.Uint32Attr(podGroup))
	peer.AddRtAttr(unix.IFLA_NUM_TX_QUEUES, nl.Uint32Attr(1))
	peer.AddRtAttr(unix.IFLA_NUM_RX_QUEUES, nl.Uint32Attr(1))
	if ifc.MTU > 0 {
		peer.AddRtAttr(unix.IFLA_MTU, nl.Uint32Attr(uint32(ifc.MTU)))
	}
	if len(ifc.MAC) > 0 {
		peer.AddRtAttr(unix.IFLA_ADDRESS, []byte(ifc.MAC))
	}
	req.AddData(info)
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}

// markPort gives a node end this run created its alias, turns its IPv6
// address generation off and, when its bridge is a plain one the plan read,
// puts it into that bridge, all in one request. The alias comes first after
// the creation: should the agent stop right here, the node end can still be
// found and collected. Without address generation a port (down until
// port security is in place) gets no IPv6 link-local address: a port needs
// none, and each one came with an fe80::/64 route, all with the same
// prefix, which the kernel keeps in one list per prefix; with a thousand
// ports every new one walked that list (measured: attach 2.8 times slower
// on a node with 1,000 podnet ports than on an empty one; about the same
// once the addresses were gone). The mode is set through netlink, so it
// needs no writable /proc/sys, which an unprivileged agent container does
// not have.
func (s *session) markPort(ifc Interface) error {
	port := hostName(s.uid, ifc.Name)
	spec := nl.NewRtAttr(unix.IFLA_AF_SPEC, nil)
	spec.AddRtAttr(unix.AF_INET6, nil).AddRtAttr(unix.IFLA_INET6_ADDR_GEN_MODE, []byte{nl.IN6_ADDR_GEN_MODE_NONE})
	attrs := []*nl.RtAttr{nl.NewRtAttr(unix.IFLA_IFALIAS, []byte(portAlias(s.uid, ifc.Name))), spec}
	s.d.bridgeMu.Lock()
	defer s.d.bridgeMu.Unlock()
	bridge, plain := s.plainBridge(ifc)
	if plain {
		attrs = append(attrs, nl.NewRtAttr(unix.IFLA_MASTER, nl.Uint32Attr(uint32(bridge))))
	}
	if err := s.setNodeLink(port, false, attrs...); err != nil {
		return err
	}
	if plain {
		s.inBridge[port] = bridge
	}
	return nil
}

// setNodeLink changes a node link found by its name, in one request: the
// attributes, and up when up is set. By name, so that a node end this run
// created needs no lookup for its index.
func (s *session) setNodeLink(name string, up bool, attrs ...*nl.RtAttr) error {
	req := s.hostRequest(unix.RTM_SETLINK, 0)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	if up {
		msg.Flags, msg.Change = unix.IFF_UP, unix.IFF_UP
	}
	req.AddData(msg)
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(name)))
	for _, a := range attrs {
		req.AddData(a)
	}
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}

// hostRequest is a request with an acknowledgement on the node's raw
// socket.
func (s *session) hostRequest(proto, flags int) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(proto, flags|unix.NLM_F_ACK)
	req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: s.hostRaw}
	return req
}
