// Package l2frame builds Ethernet frames by hand (ARP, IPv4 UDP, IPv6
// ICMPv6 and neighbour discovery, VLAN-tagged frames), so that tests can
// send exactly what a spoofing pod with raw sockets would. Test tooling
// only.
package l2frame

import (
	"encoding/binary"
	"net"
)

// Broadcast is the Ethernet broadcast address.
var Broadcast = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// AllNodes is the Ethernet address of ff02::1.
var AllNodes = net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1}

// Eth is an Ethernet frame.
func Eth(dst, src net.HardwareAddr, etherType uint16, payload []byte) []byte {
	b := append(append([]byte{}, dst...), src...)
	b = binary.BigEndian.AppendUint16(b, etherType)
	return append(b, payload...)
}

// Tagged is an 802.1Q frame of VLAN vid carrying etherType.
func Tagged(dst, src net.HardwareAddr, vid uint16, etherType uint16, payload []byte) []byte {
	b := append(append([]byte{}, dst...), src...)
	b = binary.BigEndian.AppendUint16(b, 0x8100)
	b = binary.BigEndian.AppendUint16(b, vid)
	b = binary.BigEndian.AppendUint16(b, etherType)
	return append(b, payload...)
}

// ARP is an Ethernet/IPv4 ARP packet (op 1 request, 2 reply).
func ARP(op uint16, sha net.HardwareAddr, spa net.IP, tha net.HardwareAddr, tpa net.IP) []byte {
	b := []byte{0, 1, 8, 0, 6, 4}
	b = binary.BigEndian.AppendUint16(b, op)
	b = append(b, sha...)
	b = append(b, spa.To4()...)
	b = append(b, tha...)
	return append(b, tpa.To4()...)
}

func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

// UDP4 is an IPv4 UDP packet to port 9 (discard).
func UDP4(src, dst net.IP, data []byte) []byte {
	udp := binary.BigEndian.AppendUint16(nil, 9)
	udp = binary.BigEndian.AppendUint16(udp, 9)
	udp = binary.BigEndian.AppendUint16(udp, uint16(8+len(data)))
	udp = append(binary.BigEndian.AppendUint16(udp, 0), data...)
	h := []byte{0x45, 0}
	h = binary.BigEndian.AppendUint16(h, uint16(20+len(udp)))
	h = append(h, 0, 0, 0x40, 0, 64, 17, 0, 0)
	h = append(h, src.To4()...)
	h = append(h, dst.To4()...)
	binary.BigEndian.PutUint16(h[10:], checksum(h))
	return append(h, udp...)
}

// IP6 is an IPv6 packet with one next header and hop limit 255 (as
// neighbour discovery wants).
func IP6(src, dst net.IP, next byte, payload []byte) []byte {
	h := []byte{0x60, 0, 0, 0}
	h = binary.BigEndian.AppendUint16(h, uint16(len(payload)))
	h = append(h, next, 255)
	h = append(h, src.To16()...)
	h = append(h, dst.To16()...)
	return append(h, payload...)
}

// ICMP6 is an IPv6 ICMPv6 packet with its checksum.
func ICMP6(src, dst net.IP, typ byte, body []byte) []byte {
	msg := append([]byte{typ, 0, 0, 0}, body...)
	pseudo := append(append([]byte{}, src.To16()...), dst.To16()...)
	pseudo = binary.BigEndian.AppendUint32(pseudo, uint32(len(msg)))
	pseudo = append(pseudo, 0, 0, 0, 58)
	binary.BigEndian.PutUint16(msg[2:], checksum(append(pseudo, msg...)))
	return IP6(src, dst, 58, msg)
}

// NA is an NA for target with the given flags (0x20 override,
// 0x40 solicited) and, when lla is set, a target link-layer address option.
func NA(src, dst, target net.IP, flags byte, lla net.HardwareAddr) []byte {
	body := append([]byte{flags, 0, 0, 0}, target.To16()...)
	if lla != nil {
		body = append(append(body, 2, 1), lla...)
	}
	return ICMP6(src, dst, 136, body)
}

// NS is an NS for target with, when lla is set, a source
// link-layer address option, and otherwise (duplicate address detection
// from ::) a nonce option.
func NS(src, dst, target net.IP, lla net.HardwareAddr) []byte {
	body := append([]byte{0, 0, 0, 0}, target.To16()...)
	if lla != nil {
		body = append(append(body, 1, 1), lla...)
	} else {
		body = append(body, 14, 1, 1, 2, 3, 4, 5, 6)
	}
	return ICMP6(src, dst, 135, body)
}

// SolicitedNode is the solicited-node multicast address of ip and its MAC.
func SolicitedNode(ip net.IP) (net.IP, net.HardwareAddr) {
	ip = ip.To16()
	sn := net.ParseIP("ff02::1:ff00:0")
	copy(sn[13:], ip[13:])
	return sn, net.HardwareAddr{0x33, 0x33, 0xff, ip[13], ip[14], ip[15]}
}

// HopByHop puts an empty hop-by-hop header before an IPv6 packet's
// payload (the ICMPv6 checksum does not cover it).
func HopByHop(pkt []byte) []byte {
	out := append([]byte{}, pkt[:40]...)
	out[6] = 0
	binary.BigEndian.PutUint16(out[4:], uint16(len(pkt)-40+8))
	out = append(out, 58, 0, 1, 4, 0, 0, 0, 0)
	return append(out, pkt[40:]...)
}

// AppendND appends options to an ICMPv6 ND packet made by NA or NS and
// redoes its length and checksum.
func AppendND(pkt []byte, opts ...[]byte) []byte {
	src, dst := net.IP(pkt[8:24]), net.IP(pkt[24:40])
	body := append([]byte{}, pkt[44:]...)
	for _, o := range opts {
		body = append(body, o...)
	}
	return ICMP6(src, dst, pkt[40], body)
}

// Payload is what follows a frame's Ethernet header and VLAN tag: what
// tells frames apart once a bridge may have trimmed what follows an IP
// packet and a packet socket shows a VLAN tag apart from the frame.
func Payload(frame []byte) []byte {
	if len(frame) < 14 {
		return nil
	}
	if frame[12] == 0x81 && frame[13] == 0 && len(frame) >= 18 {
		return frame[18:]
	}
	return frame[14:]
}
