package portsecurity

import (
	"encoding/binary"
	"net"
)

// Frames for the root tests, built by hand so that every field a spoofer
// controls is set exactly.

var broadcastMAC = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// allNodesMAC is the Ethernet address of ff02::1.
var allNodesMAC = net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1}

func ethFrame(dst, src net.HardwareAddr, etherType uint16, payload []byte) []byte {
	b := append(append([]byte{}, dst...), src...)
	b = binary.BigEndian.AppendUint16(b, etherType)
	return append(b, payload...)
}

// taggedFrame is an 802.1Q frame of VLAN vid carrying etherType.
func taggedFrame(dst, src net.HardwareAddr, vid uint16, etherType uint16, payload []byte) []byte {
	b := append(append([]byte{}, dst...), src...)
	b = binary.BigEndian.AppendUint16(b, 0x8100)
	b = binary.BigEndian.AppendUint16(b, vid)
	b = binary.BigEndian.AppendUint16(b, etherType)
	return append(b, payload...)
}

// arpPacket is an Ethernet/IPv4 ARP packet (op 1 request, 2 reply).
func arpPacket(op uint16, sha net.HardwareAddr, spa net.IP, tha net.HardwareAddr, tpa net.IP) []byte {
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

// udp4Packet is an IPv4 UDP packet to port 9 (discard).
func udp4Packet(src, dst net.IP, data []byte) []byte {
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

// ip6Packet is an IPv6 packet with one next header and hop limit 255 (as
// neighbour discovery wants).
func ip6Packet(src, dst net.IP, next byte, payload []byte) []byte {
	h := []byte{0x60, 0, 0, 0}
	h = binary.BigEndian.AppendUint16(h, uint16(len(payload)))
	h = append(h, next, 255)
	h = append(h, src.To16()...)
	h = append(h, dst.To16()...)
	return append(h, payload...)
}

// icmp6Packet is an IPv6 ICMPv6 packet with its checksum.
func icmp6Packet(src, dst net.IP, typ byte, body []byte) []byte {
	msg := append([]byte{typ, 0, 0, 0}, body...)
	pseudo := append(append([]byte{}, src.To16()...), dst.To16()...)
	pseudo = binary.BigEndian.AppendUint32(pseudo, uint32(len(msg)))
	pseudo = append(pseudo, 0, 0, 0, 58)
	binary.BigEndian.PutUint16(msg[2:], checksum(append(pseudo, msg...)))
	return ip6Packet(src, dst, 58, msg)
}

// neighborAdvert is an NA for target with the given flags (0x20 override,
// 0x40 solicited) and, when lla is set, a target link-layer address option.
func neighborAdvert(src, dst, target net.IP, flags byte, lla net.HardwareAddr) []byte {
	body := append([]byte{flags, 0, 0, 0}, target.To16()...)
	if lla != nil {
		body = append(append(body, 2, 1), lla...)
	}
	return icmp6Packet(src, dst, 136, body)
}

// neighborSolicit is an NS for target with, when lla is set, a source
// link-layer address option, and otherwise (duplicate address detection
// from ::) a nonce option.
func neighborSolicit(src, dst, target net.IP, lla net.HardwareAddr) []byte {
	body := append([]byte{0, 0, 0, 0}, target.To16()...)
	if lla != nil {
		body = append(append(body, 1, 1), lla...)
	} else {
		body = append(body, 14, 1, 1, 2, 3, 4, 5, 6)
	}
	return icmp6Packet(src, dst, 135, body)
}

// solicitedNode is the solicited-node multicast address of ip and its MAC.
func solicitedNode(ip net.IP) (net.IP, net.HardwareAddr) {
	ip = ip.To16()
	sn := net.ParseIP("ff02::1:ff00:0")
	copy(sn[13:], ip[13:])
	return sn, net.HardwareAddr{0x33, 0x33, 0xff, ip[13], ip[14], ip[15]}
}
