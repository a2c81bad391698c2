package portsecurity

import (
	"net"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Header fields the rules read, as (base, offset, length).
type field struct {
	base   expr.PayloadBase
	offset uint32
	len    uint32
}

var (
	etherSrc  = field{expr.PayloadBaseLLHeader, 6, 6}
	etherType = field{expr.PayloadBaseLLHeader, 12, 2}
	// arpShape is hardware type, protocol type and their lengths: only
	// Ethernet/IPv4 ARP (0001 0800 06 04) has the fields below where they
	// are read.
	arpShape     = field{expr.PayloadBaseNetworkHeader, 0, 6}
	arpSenderMAC = field{expr.PayloadBaseNetworkHeader, 8, 6}
	arpSenderIP  = field{expr.PayloadBaseNetworkHeader, 14, 4}
	ip4Src       = field{expr.PayloadBaseNetworkHeader, 12, 4}
	icmp4Type    = field{expr.PayloadBaseTransportHeader, 0, 1}
	udpSrcPort   = field{expr.PayloadBaseTransportHeader, 0, 2}
	ip6PayLen    = field{expr.PayloadBaseNetworkHeader, 4, 2}
	ip6NextHdr   = field{expr.PayloadBaseNetworkHeader, 6, 1}
	ip6Src       = field{expr.PayloadBaseNetworkHeader, 8, 16}
	icmp6Type    = field{expr.PayloadBaseTransportHeader, 0, 1}
	// ndTarget is the target address of a neighbour solicitation or
	// advertisement; ndOptType and ndOptMAC the first option's type and,
	// for a link-layer address option, its address.
	ndTarget  = field{expr.PayloadBaseTransportHeader, 8, 16}
	ndOptType = field{expr.PayloadBaseTransportHeader, 24, 1}
	ndOptMAC  = field{expr.PayloadBaseTransportHeader, 26, 6}
)

// ICMPv6 neighbour discovery: types, option types and the largest message
// a port may send (header, target and one 8-byte option).
const (
	routerAdvert    = 134
	ndSolicit       = 135
	ndAdvert        = 136
	redirect6       = 137
	redirect4       = 5
	dhcpServerPort  = 67
	dhcp6ServerPort = 547
	ndOptSourceLL   = 1
	ndOptTargetLL   = 2
	ndMaxPayloadLen = 32
	ethTypeQinQ     = 0x88a8
)

// owner is how a rule asks whether a header field holds the port's own
// MAC or address: against the plan's values and the port's own sets in a
// chain of one port (egress), or against a set shared by every port, keyed
// by the input port's name joined with the value (the node's bridge
// ports). Each returns the expressions that match when the field does NOT
// hold one of the port's own.
type owner interface {
	notMAC(f field) []expr.Any
	notV4(f field) []expr.Any
	notV6(f field) []expr.Any
}

// portRules are the drops every secured port gets. With routerDrops, the
// drops of what only routers send follow, each behind the matches of
// notRouter (nothing where the chain is a non-router port's own). Anything
// no rule drops is accepted by whoever called.
func portRules(o owner, routerDrops bool, notRouter []expr.Any) [][]expr.Any {
	arp, ip4, ip6 := isType(unix.ETH_P_ARP), isType(unix.ETH_P_IP), isType(unix.ETH_P_IPV6)
	nd := join(ip6, l4(unix.IPPROTO_ICMPV6), load(icmp6Type), between([]byte{ndSolicit}, []byte{ndAdvert}))
	rules := [][]expr.Any{
		// Someone else's source MAC.
		drop(o.notMAC(etherSrc)),
		// A VLAN tag would hide the inner header from every check below.
		drop(isType(unix.ETH_P_8021Q)),
		drop(isType(ethTypeQinQ)),
		// The kernel parses a frame by the protocol it was handed with
		// (skb->protocol): a packet socket may name another than the
		// frame's EtherType, or none on links that cannot tell it (macvlan
		// before Linux 6.x), and the checks below that read the
		// transport header would then see no transport header at all.
		drop(arp, notProtocol(unix.ETH_P_ARP)),
		drop(ip4, notProtocol(unix.ETH_P_IP)),
		drop(ip6, notProtocol(unix.ETH_P_IPV6)),
		// ARP: only Ethernet/IPv4, from its own MAC and address (or
		// 0.0.0.0, a probe).
		drop(arp, load(arpShape), cmp(expr.CmpOpNeq, []byte{0, 1, 8, 0, 6, 4})),
		drop(arp, o.notMAC(arpSenderMAC)),
		drop(arp, load(arpSenderIP), cmp(expr.CmpOpNeq, net.IPv4zero.To4()), o.notV4(arpSenderIP)),
		// IPv4 from its own addresses only.
		drop(ip4, o.notV4(ip4Src)),
		// IPv6 from its own addresses, link-local included, or :: (DAD).
		drop(ip6, load(ip6Src), cmp(expr.CmpOpNeq, net.IPv6unspecified), o.notV6(ip6Src)),
		// Neighbour discovery in the plain form the kernel sends, so the
		// fields below are where they are read: no extension header, at
		// most one option, and a link-layer address option carries its
		// own MAC.
		drop(nd, load(ip6NextHdr), cmp(expr.CmpOpNeq, []byte{unix.IPPROTO_ICMPV6})),
		drop(nd, load(ip6PayLen), cmp(expr.CmpOpGt, be16(ndMaxPayloadLen))),
		drop(nd, load(ndOptType), between([]byte{ndOptSourceLL}, []byte{ndOptTargetLL}), o.notMAC(ndOptMAC)),
		// An advertisement claims only its own addresses.
		drop(ip6, l4(unix.IPPROTO_ICMPV6), load(icmp6Type), cmp(expr.CmpOpEq, []byte{ndAdvert}), o.notV6(ndTarget)),
	}
	if routerDrops {
		for _, r := range routerRules(ip4, ip6) {
			rules = append(rules, join(notRouter, r))
		}
	}
	return rules
}

// routerRules drop what only a network's routers and DHCP servers send:
// from any other pod it would make the pod the others' default router,
// move their routes or MTU, or hand them addresses.
func routerRules(ip4, ip6 []expr.Any) [][]expr.Any {
	icmp6 := join(ip6, l4(unix.IPPROTO_ICMPV6), load(icmp6Type))
	return [][]expr.Any{
		drop(icmp6, cmp(expr.CmpOpEq, []byte{routerAdvert})),
		drop(icmp6, cmp(expr.CmpOpEq, []byte{redirect6})),
		drop(ip4, l4(unix.IPPROTO_ICMP), load(icmp4Type), cmp(expr.CmpOpEq, []byte{redirect4})),
		drop(ip4, l4(unix.IPPROTO_UDP), load(udpSrcPort), cmp(expr.CmpOpEq, be16(dhcpServerPort))),
		drop(ip6, l4(unix.IPPROTO_UDP), load(udpSrcPort), cmp(expr.CmpOpEq, be16(dhcp6ServerPort))),
	}
}

// planOwner asks a chain of one port's plan: its MAC by value, its
// addresses in the chain's own sets.
type planOwner struct {
	mac          []byte
	v4Set, v6Set string
}

func (o planOwner) notMAC(f field) []expr.Any { return []expr.Any{load(f), cmp(expr.CmpOpNeq, o.mac)} }
func (o planOwner) notV4(f field) []expr.Any  { return []expr.Any{load(f), notIn(o.v4Set)} }
func (o planOwner) notV6(f field) []expr.Any  { return []expr.Any{load(f), notIn(o.v6Set)} }

// chainRules are the rules of a chain that filters one port by itself.
func chainRules(pl Plan, v4Set, v6Set string) [][]expr.Any {
	return portRules(planOwner{mac: pl.MAC, v4Set: v4Set, v6Set: v6Set}, !pl.Router, nil)
}

// ownFrame accepts a frame from the port's own MAC: the last rule of a
// chain whose policy is drop, reached only by what no rule dropped.
func ownFrame(pl Plan) []expr.Any {
	return []expr.Any{load(etherSrc), cmp(expr.CmpOpEq, pl.MAC), &expr.Verdict{Kind: expr.VerdictAccept}}
}

func load(f field) expr.Any {
	return &expr.Payload{DestRegister: 1, Base: f.base, Offset: f.offset, Len: f.len}
}

func cmp(op expr.CmpOp, data []byte) expr.Any {
	return &expr.Cmp{Op: op, Register: 1, Data: data}
}

func between(from, to []byte) expr.Any {
	return &expr.Range{Op: expr.CmpOpEq, Register: 1, FromData: from, ToData: to}
}

func notIn(set string) expr.Any {
	return &expr.Lookup{SourceRegister: 1, SetName: set, Invert: true}
}

// isType matches the frame's EtherType as on the wire: with a VLAN tag
// the kernel moved into metadata, nftables reads the tag's type.
func isType(t uint16) []expr.Any {
	return []expr.Any{load(etherType), cmp(expr.CmpOpEq, be16(t))}
}

// notProtocol matches a frame the kernel does not take for a t frame.
func notProtocol(t uint16) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyPROTOCOL, Register: 1},
		cmp(expr.CmpOpNeq, be16(t)),
	}
}

// l4 matches the transport protocol after any IPv6 extension headers.
func l4(proto byte) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		cmp(expr.CmpOpEq, []byte{proto}),
	}
}

// join concatenates matches (expressions or lists of them) into one.
func join(parts ...any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		switch p := p.(type) {
		case expr.Any:
			out = append(out, p)
		case []expr.Any:
			out = append(out, p...)
		}
	}
	return out
}

// drop is a rule of the given matches whose verdict is drop.
func drop(parts ...any) []expr.Any {
	return append(join(parts...), &expr.Verdict{Kind: expr.VerdictDrop})
}

// concatReg is the first 32-bit register (NFT_REG32_00): a set key joined
// of the input port's name (16 bytes, registers 8 to 11) and a header field
// (from register 12) is built there.
const concatReg = unix.NFT_REG32_00

// sharedOwner asks the sets every port shares, by the input port's name
// joined with the field.
type sharedOwner struct{}

func (sharedOwner) notMAC(f field) []expr.Any { return notJoinedIn(macSet.Name, f) }
func (sharedOwner) notV4(f field) []expr.Any  { return notJoinedIn(v4Set.Name, f) }
func (sharedOwner) notV6(f field) []expr.Any  { return notJoinedIn(v6Set.Name, f) }

// notJoinedIn matches a frame whose input port's name joined with field f
// is not in the set.
func notJoinedIn(set string, f field) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: concatReg},
		&expr.Payload{DestRegister: concatReg + unix.IFNAMSIZ/4, Base: f.base, Offset: f.offset, Len: f.len},
		&expr.Lookup{SourceRegister: concatReg, SetName: set, Invert: true},
	}
}

// inputIn matches a frame whose input port is (or, with invert, is not)
// in the set of port names.
func inputIn(set string, invert bool) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
		&expr.Lookup{SourceRegister: 1, SetName: set, Invert: invert},
	}
}

// baseRules are the base chain's rules: a frame from a port that is not
// secured is accepted at once; one from a secured port meets the drops of
// portRules, looked up in the shared sets, the router drops only for
// ports in noRouterSet.
func baseRules() [][]expr.Any {
	accept := append(inputIn(securedSet.Name, true), &expr.Verdict{Kind: expr.VerdictAccept})
	return append([][]expr.Any{accept}, portRules(sharedOwner{}, true, inputIn(noRouterSet.Name, false))...)
}
