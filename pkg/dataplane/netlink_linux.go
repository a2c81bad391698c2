package dataplane

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/nldump"
)

// routeProtocol marks the routes podnet adds inside pods (rtm_protocol), so
// that the planner compares only its own routes and never removes a route
// the kernel or anyone else made. 0x70 is not assigned in rtnetlink.h or
// iproute2's rt_protos.
const routeProtocol netlink.RouteProtocol = 0x70

// podGroup is the link group (IFLA_GROUP) of every podnet link inside a pod.
// Deleting a group is one kernel operation with one RCU grace period, where
// deleting links one by one waits for a grace period each: detaching a pod
// of four interfaces is several times faster.
const podGroup = 0x706e

// deleteGroup deletes every link of podGroup in the netns ns.
func deleteGroup(ns netns.NsHandle) error {
	req := nl.NewNetlinkRequest(unix.RTM_DELLINK, unix.NLM_F_ACK)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_GROUP, nl.Uint32Attr(podGroup)))
	_, err := rawRequest(ns, req, 0)
	return ignore(err, unix.ENODEV) // no link in the group
}

// rawRequest runs one netlink request on a socket opened in the netns ns,
// for what the netlink library has no call for.
func rawRequest(ns netns.NsHandle, req *nl.NetlinkRequest, resType uint16) ([][]byte, error) {
	sock, err := nl.GetNetlinkSocketAt(ns, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return nil, err
	}
	defer sock.Close()
	req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: {Socket: sock}}
	return req.Execute(unix.NETLINK_ROUTE, resType)
}

// linkHead is what podnet reads of a link in its lean dumps (dumpLinks on
// the node, podLinks in a pod): enough to recognise its marks and ports,
// and a pod's primary MTU, nothing more.
type linkHead struct {
	index      int
	name       string
	alias      string
	master     int
	kind       string
	mtu        int
	hostDevice bool // an alternative name carries a host device's origin
}

// rtextFilterSkipStats asks the kernel to leave the link statistics out of
// a dump (RTEXT_FILTER_SKIP_STATS in linux/rtnetlink.h).
const rtextFilterSkipStats = 1 << 3

// dumpLinks lists the node links of one kind ("" = any) or with one master
// (0 = any). The kernel does the filtering and leaves statistics out, and
// only names, aliases and masters are parsed: on a node with a thousand
// ports the netlink library's full dump and parse of every link took a
// hundred milliseconds and more. Every answer is checked against the filter
// anyway, since a kernel that does not know one sends all links.
//
// Each answer is read as it arrives and only its linkHead kept: a dump
// kept whole holds a 64 KiB receive buffer per read, several for a node of
// a few hundred ports, and every worker of the agent may dump at once.
func dumpLinks(ns netns.NsHandle, kind string, master int) ([]linkHead, error) {
	return nldump.Retry(func() ([]linkHead, error) {
		req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_DUMP)
		req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
		req.AddData(nl.NewRtAttr(unix.IFLA_EXT_MASK, nl.Uint32Attr(rtextFilterSkipStats)))
		if kind != "" {
			info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
			info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated(kind))
			req.AddData(info)
		}
		if master != 0 {
			req.AddData(nl.NewRtAttr(unix.IFLA_MASTER, nl.Uint32Attr(uint32(master))))
		}
		var out []linkHead
		var perr error
		err := rawRequestIter(ns, req, unix.RTM_NEWLINK, func(m []byte) bool {
			l, err := parseLinkHead(m)
			if err != nil {
				perr = err
				return false
			}
			if (kind == "" || l.kind == kind) && (master == 0 || l.master == master) {
				out = append(out, l)
			}
			return true
		})
		if perr != nil {
			return nil, perr
		}
		return out, err
	})
}

// LinkNames lists the names of the links in the netns ns (netns.None():
// the caller's own) with dumpLinks' lean read: a probe that needs only the
// names does not parse, for each of a full node's ports, every attribute
// the netlink library knows.
func LinkNames(ns netns.NsHandle) ([]string, error) {
	links, err := dumpLinks(ns, "", 0)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(links))
	for i, l := range links {
		names[i] = l.name
	}
	return names, nil
}

// rawRequestIter runs one netlink request on a socket opened in the netns
// ns and hands each answer to f as it is read; f returns false to skip the
// rest. The answers are valid only during f.
func rawRequestIter(ns netns.NsHandle, req *nl.NetlinkRequest, resType uint16, f func([]byte) bool) error {
	sock, err := nl.GetNetlinkSocketAt(ns, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer sock.Close()
	req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: {Socket: sock}}
	return req.ExecuteIter(unix.NETLINK_ROUTE, resType, f)
}

// parseLinkHead reads one RTM_NEWLINK answer, copying out what it keeps.
func parseLinkHead(m []byte) (linkHead, error) {
	if len(m) < unix.SizeofIfInfomsg {
		return linkHead{}, fmt.Errorf("link message of %d bytes: shorter than its header", len(m))
	}
	msg := nl.DeserializeIfInfomsg(m)
	l := linkHead{index: int(msg.Index)}
	err := nldump.WalkAttrs(m[msg.Len():], func(typ uint16, v []byte) {
		switch typ {
		case unix.IFLA_IFNAME:
			l.name = strings.TrimRight(string(v), "\x00")
		case unix.IFLA_IFALIAS:
			l.alias = strings.TrimRight(string(v), "\x00")
		case unix.IFLA_MASTER:
			if len(v) == 4 {
				l.master = int(native.Uint32(v))
			}
		case unix.IFLA_MTU:
			if len(v) == 4 {
				l.mtu = int(native.Uint32(v))
			}
		case unix.IFLA_LINKINFO:
			l.kind = linkKind(v)
		case unix.IFLA_PROP_LIST | unix.NLA_F_NESTED, unix.IFLA_PROP_LIST:
			// The kernel marks this list nested; IFLA_LINKINFO it
			// does not.
			_ = nldump.WalkAttrs(v, func(typ uint16, alt []byte) {
				if typ == unix.IFLA_ALT_IFNAME {
					_, ok := originOf([]string{strings.TrimRight(string(alt), "\x00")})
					l.hostDevice = l.hostDevice || ok
				}
			})
		}
	})
	return l, err
}

// linkKind reads IFLA_INFO_KIND out of an IFLA_LINKINFO attribute.
func linkKind(linkInfo []byte) string {
	var kind string
	_ = nldump.WalkAttrs(linkInfo, func(typ uint16, v []byte) {
		if typ == nl.IFLA_INFO_KIND {
			kind = strings.TrimRight(string(v), "\x00")
		}
	})
	return kind
}

// native is the byte order of netlink attributes.
var native = binary.NativeEndian

func linkList(h *netlink.Handle) ([]netlink.Link, error) {
	return nldump.Links(h)
}

func addrList(h *netlink.Handle) ([]netlink.Addr, error) {
	return nldump.Addrs(h, nil, netlink.FAMILY_ALL)
}

func podnetRouteList(h *netlink.Handle) ([]netlink.Route, error) {
	all, err := allRouteList(h)
	var out []netlink.Route
	for _, r := range all {
		if r.Protocol == routeProtocol {
			out = append(out, r)
		}
	}
	return out, err
}

// allRouteList lists the routes of every table and family.
func allRouteList(h *netlink.Handle) ([]netlink.Route, error) {
	// Every table: an interface in a VRF has its routes in the VRF's.
	filter := &netlink.Route{Table: unix.RT_TABLE_UNSPEC}
	return nldump.Routes(h, netlink.FAMILY_ALL, filter, netlink.RT_FILTER_TABLE)
}

func bridgeVLANList(h *netlink.Handle) (map[int32][]vlanInfo, error) {
	raw, err := nldump.Retry(h.BridgeVlanList)
	if err != nil {
		return nil, err
	}
	out := make(map[int32][]vlanInfo, len(raw))
	for idx, infos := range raw {
		for _, v := range infos {
			out[idx] = append(out[idx], vlanInfo{vid: int(v.Vid), pvid: v.PortVID()})
		}
	}
	return out, nil
}

type vlanInfo struct {
	vid  int
	pvid bool
}

// linkByName returns nil, nil when the link does not exist.
func linkByName(h *netlink.Handle, name string) (netlink.Link, error) {
	l, err := h.LinkByName(name)
	if err != nil {
		if isNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return l, nil
}

func isNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf) || errors.Is(err, unix.ENODEV)
}

// explainNotSupported names the missing kernel feature, because the kernel's
// own answer ("operation not supported") does not say which one.
func explainNotSupported(err error, what string) error {
	if errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Errorf("the kernel has no %s support: %w", what, err)
	}
	return err
}

// ipNet turns the kernel's nil destination of a default route into 0/0.
func ipNet(n *net.IPNet, family int) net.IPNet {
	if n != nil {
		return *n
	}
	if family == netlink.FAMILY_V6 {
		return net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}
	}
	return net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}
}

var macvlanModeNames = map[netlink.MacvlanMode]string{
	netlink.MACVLAN_MODE_BRIDGE:   "bridge",
	netlink.MACVLAN_MODE_PRIVATE:  "private",
	netlink.MACVLAN_MODE_VEPA:     "vepa",
	netlink.MACVLAN_MODE_PASSTHRU: "passthru",
}

var ipvlanModeNames = map[netlink.IPVlanMode]string{
	netlink.IPVLAN_MODE_L2:  "l2",
	netlink.IPVLAN_MODE_L3:  "l3",
	netlink.IPVLAN_MODE_L3S: "l3s",
}

func macvlanMode(name string) netlink.MacvlanMode {
	for m, n := range macvlanModeNames {
		if n == name {
			return m
		}
	}
	return netlink.MACVLAN_MODE_BRIDGE
}

func ipvlanMode(name string) netlink.IPVlanMode {
	for m, n := range ipvlanModeNames {
		if n == name {
			return m
		}
	}
	return netlink.IPVLAN_MODE_L2
}

// podLinkDump is one read of a pod's links: whole, those that may be
// podnet's; by name alone, the others (foreign); and the pod's primary
// interface's MTU.
type podLinkDump struct {
	links      []netlink.Link
	foreign    []string
	primaryMTU int
}

// podLinks dumps the pod's links in one request on the session's raw
// socket, and parses whole, with the netlink library, only the links that
// may be podnet's (mayBePodnets). A first attach finds only the pod's
// loopback and primary interface, of which it needs the names and the
// primary's MTU: parsing every attribute of each (and its statistics,
// which the dump leaves out) was most of what a plan allocated.
func (s *session) podLinks() (podLinkDump, error) {
	return nldump.Retry(func() (podLinkDump, error) {
		req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_DUMP)
		req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: s.podRaw}
		req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
		req.AddData(nl.NewRtAttr(unix.IFLA_EXT_MASK, nl.Uint32Attr(nl.RTEXT_FILTER_VF|rtextFilterSkipStats)))
		var out podLinkDump
		var perr error
		err := req.ExecuteIter(unix.NETLINK_ROUTE, unix.RTM_NEWLINK, func(m []byte) bool {
			h, err := parseLinkHead(m)
			if err == nil && h.name == primaryName {
				out.primaryMTU = h.mtu
			}
			if err == nil && !h.mayBePodnets() {
				out.foreign = append(out.foreign, h.name)
				return true
			}
			var l netlink.Link
			if err == nil {
				// The answer's buffer is read again for the next one.
				l, err = netlink.LinkDeserialize(nil, bytes.Clone(m))
			}
			if err != nil {
				perr = err
				return false
			}
			out.links = append(out.links, l)
			return true
		})
		if perr != nil {
			return podLinkDump{}, perr
		}
		return out, err
	})
}

// mayBePodnets: the link is a VRF (a VRF holds podnet's links), or
// carries a mark of podnet's (its alias, a host device's origin, the
// wire check's alias), or is an unaliased veth podnet may have stopped
// building (isUnfinishedVeth), which the primary interface never is.
func (h linkHead) mayBePodnets() bool {
	switch {
	case h.kind == "vrf", h.hostDevice, isPodAlias(h.alias, h.name), h.alias == checkingAlias(h.name):
		return true
	}
	return h.kind == "veth" && h.alias == "" && !reservedName(h.name)
}
