package dataplane

import (
	"encoding/binary"
	"fmt"
	"net"
	"time"
)

// AddressConflictError says another MAC on the interface's network answers
// for, or probes for, one of its addresses.
type AddressConflictError struct {
	Interface string
	Address   net.IP
	MAC       net.HardwareAddr
}

func (e *AddressConflictError) Error() string {
	return fmt.Sprintf("interface %q: address %s is in use on its network by MAC %s", e.Interface, e.Address, e.MAC)
}

// GatewayUnansweredError says a gateway the network requires did not
// answer the interface.
type GatewayUnansweredError struct {
	Interface string
	Gateway   net.IP
	Waited    time.Duration
}

func (e *GatewayUnansweredError) Error() string {
	return fmt.Sprintf("interface %q: gateway %s did not answer within %s", e.Interface, e.Gateway, e.Waited)
}

// The frames of the wire checks, without their Ethernet header (the
// packet socket adds it), and the reading of the answers. Pure, so that
// what counts as a conflict is tested without a network.

const (
	arpRequest = 1
	arpReply   = 2
	arpLen     = 28

	icmpv6NS    = 135
	icmpv6NA    = 136
	ipv6HdrLen  = 40
	protoICMPv6 = 58
)

var broadcastMAC = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// arpFrame is an Ethernet/IPv4 ARP packet. A probe has sender 0.0.0.0 (RFC
// 5227 2.1.1), an announcement sender and target both the address.
func arpFrame(op uint16, sha net.HardwareAddr, spa, tpa net.IP) []byte {
	b := make([]byte, arpLen)
	binary.BigEndian.PutUint16(b[0:], 1)      // Ethernet
	binary.BigEndian.PutUint16(b[2:], 0x0800) // IPv4
	b[4], b[5] = 6, 4
	binary.BigEndian.PutUint16(b[6:], op)
	copy(b[8:14], sha)
	copy(b[14:18], spa.To4())
	copy(b[24:28], tpa.To4())
	return b
}

// arpPacket is the part of an ARP packet the checks read.
type arpPacket struct {
	op       uint16
	sha      net.HardwareAddr
	spa, tpa net.IP
}

func parseARP(b []byte) (arpPacket, bool) {
	if len(b) < arpLen || binary.BigEndian.Uint16(b[0:]) != 1 || binary.BigEndian.Uint16(b[2:]) != 0x0800 || b[4] != 6 || b[5] != 4 {
		return arpPacket{}, false
	}
	return arpPacket{
		op:  binary.BigEndian.Uint16(b[6:]),
		sha: net.HardwareAddr(b[8:14]),
		spa: net.IP(b[14:18]), tpa: net.IP(b[24:28]),
	}, true
}

// arpConflict reports whether p says another host holds addr: it uses addr
// as its sender, or probes for addr itself (RFC 5227 2.1.1).
func arpConflict(p arpPacket, addr net.IP, own net.HardwareAddr) bool {
	if p.sha.String() == own.String() {
		return false
	}
	if p.spa.Equal(addr.To4()) {
		return true
	}
	return p.op == arpRequest && p.spa.Equal(net.IPv4zero.To4()) && p.tpa.Equal(addr.To4())
}

// neighborSolicitation is an IPv6 packet soliciting target from src. From
// :: it is duplicate address detection's probe (RFC 4862 5.4.2), which
// carries no link-layer option; otherwise it carries the sender's MAC.
func neighborSolicitation(src, target net.IP, own net.HardwareAddr) (pkt []byte, dstMAC net.HardwareAddr) {
	dst := solicitedNode(target)
	icmp := make([]byte, 24, 32)
	icmp[0] = icmpv6NS
	copy(icmp[8:], target.To16())
	if !src.Equal(net.IPv6unspecified) {
		icmp = append(icmp, 1, 1) // source link-layer address, 8 bytes
		icmp = append(icmp, own...)
	}
	binary.BigEndian.PutUint16(icmp[2:], icmpv6Checksum(src, dst, icmp))
	pkt = make([]byte, ipv6HdrLen, ipv6HdrLen+len(icmp))
	pkt[0] = 0x60
	binary.BigEndian.PutUint16(pkt[4:], uint16(len(icmp)))
	pkt[6], pkt[7] = protoICMPv6, 255
	copy(pkt[8:24], src.To16())
	copy(pkt[24:40], dst)
	d := dst.To16()
	return append(pkt, icmp...), net.HardwareAddr{0x33, 0x33, d[12], d[13], d[14], d[15]}
}

func icmpv6Checksum(src, dst net.IP, msg []byte) uint16 {
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(b[i])<<8 | uint32(b[i+1])
		}
		if len(b)%2 == 1 {
			sum += uint32(b[len(b)-1]) << 8
		}
	}
	add(src.To16())
	add(dst.To16())
	var l [8]byte
	binary.BigEndian.PutUint32(l[0:], uint32(len(msg)))
	l[7] = protoICMPv6
	add(l[:])
	add(msg)
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

// ndPacket is the part of a neighbour solicitation or advertisement the
// checks read.
type ndPacket struct {
	typ         byte
	src, target net.IP
}

func parseND(b []byte) (ndPacket, bool) {
	if len(b) < ipv6HdrLen+24 || b[0]>>4 != 6 || b[6] != protoICMPv6 {
		return ndPacket{}, false
	}
	icmp := b[ipv6HdrLen:]
	if icmp[0] != icmpv6NS && icmp[0] != icmpv6NA || icmp[1] != 0 {
		return ndPacket{}, false
	}
	return ndPacket{typ: icmp[0], src: net.IP(b[8:24]), target: net.IP(icmp[8:24])}, true
}

// ndConflict reports whether p, from the MAC from, says another host holds
// addr: it advertises addr, or runs duplicate address detection for it.
func ndConflict(p ndPacket, from net.HardwareAddr, addr net.IP, own net.HardwareAddr) bool {
	if from.String() == own.String() || !p.target.Equal(addr) {
		return false
	}
	return p.typ == icmpv6NA || p.src.Equal(net.IPv6unspecified)
}
