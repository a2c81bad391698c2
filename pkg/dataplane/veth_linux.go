package dataplane

import (
	"slices"

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
	if !hasPort(ifc.Kind) {
		_, err := req.Execute(unix.NETLINK_ROUTE, 0)
		return err
	}
	// The node end joins its bridge at creation when the plan read that
	// bridge (plainBridge, valid under bridgeMu); the kernel takes the
	// veth away again if it cannot join.
	s.d.bridgeMu.Lock()
	defer s.d.bridgeMu.Unlock()
	bridge, plain := s.plainBridge(ifc)
	if !plain {
		_, err := req.Execute(unix.NETLINK_ROUTE, 0)
		return err
	}
	withMaster := *req
	withMaster.Data = append(slices.Clone(req.Data), nl.NewRtAttr(unix.IFLA_MASTER, nl.Uint32Attr(uint32(bridge))))
	if _, err := withMaster.Execute(unix.NETLINK_ROUTE, 0); err != nil {
		// The bridge may be known from an earlier plan and gone since
		// (knownbridge.go): the kernel refused the veth and took it
		// away. Made without a master, it joins the bridge that
		// attachPort reads, or creates, by name.
		s.d.forgetBridges(ifc.Bridge)
		delete(s.bridges, ifc.Bridge)
		_, err = req.Execute(unix.NETLINK_ROUTE, 0)
		return err
	}
	s.inBridge[hostName(s.uid, ifc.Name)] = bridge
	return nil
}

// portMarks are the attributes the request that sets a node end up
// carries besides up: IPv6 address generation off and, for a node end
// this run created, its alias. Address generation goes off no later than
// the port goes up, since the kernel makes a link-local address only then
// (and only with a carrier, which a veth has once both ends are up): a
// port needs none, and each one came with an fe80::/64 route, all with the
// same prefix, which the kernel keeps in one list per prefix; with a
// thousand ports every new one walked that list (measured: attach 2.8
// times slower on a node with 1,000 podnet ports than on an empty one;
// about the same once the addresses were gone). The mode is set through
// netlink, so it needs no writable /proc/sys, which an unprivileged agent
// container does not have.
//
// The alias comes with up and not right after the creation, which would
// cost a request of its own: a node end is found without it, by its
// name, while its pod end lives. Should the agent stop in between, the
// pod end is an unfinished veth that the next Apply makes anew
// (isUnfinishedVeth), and a pod's netns that goes takes both ends with it.
func (s *session) portMarks(ifname string) []*nl.RtAttr {
	spec := nl.NewRtAttr(unix.IFLA_AF_SPEC, nil)
	spec.AddRtAttr(unix.AF_INET6, nil).AddRtAttr(unix.IFLA_INET6_ADDR_GEN_MODE, []byte{nl.IN6_ADDR_GEN_MODE_NONE})
	attrs := []*nl.RtAttr{spec}
	if _, created := s.created[ifname]; created {
		attrs = append(attrs, nl.NewRtAttr(unix.IFLA_IFALIAS, []byte(portAlias(s.uid, ifname))))
	}
	return attrs
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
