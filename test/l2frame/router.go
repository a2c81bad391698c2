package l2frame

import (
	"encoding/binary"
	"net"

	"golang.org/x/sys/unix"
)

// RA is a router advertisement from src to all nodes: router lifetime
// 1800 s (a default router), an MTU option of mtu and a prefix
// information option for prefix (/64, on-link and autonomous, so SLAAC
// takes it).
func RA(src net.IP, lla net.HardwareAddr, mtu uint32, prefix net.IP) []byte {
	body := []byte{64, 0, 0x07, 0x08, 0, 0, 0, 0, 0, 0, 0, 0} // hop limit, flags, lifetime 1800, reachable, retrans
	body = append(append(body, 1, 1), lla...)
	body = binary.BigEndian.AppendUint32(append(body, 5, 1, 0, 0), mtu)
	pio := []byte{3, 4, 64, 0xc0}
	pio = binary.BigEndian.AppendUint32(pio, 86400)
	pio = binary.BigEndian.AppendUint32(pio, 14400)
	pio = append(append(pio, 0, 0, 0, 0), prefix.To16()...)
	return ICMP6(src, net.ParseIP("ff02::1"), 134, append(body, pio...))
}

// Redirect6 is an ICMPv6 redirect from src telling dst that target is the
// better first hop to reach dest.
func Redirect6(src, dst, target, dest net.IP) []byte {
	body := append([]byte{0, 0, 0, 0}, target.To16()...)
	return ICMP6(src, dst, 137, append(body, dest.To16()...))
}

// Redirect4 is an ICMP redirect (host) from src telling dst to reach dest
// through gateway.
func Redirect4(src, dst, gateway, dest net.IP) []byte {
	msg := append([]byte{5, 1, 0, 0}, gateway.To4()...)
	// The header of the datagram the redirect is about.
	inner := []byte{0x45, 0, 0, 28, 0, 0, 0x40, 0, 64, 17, 0, 0}
	inner = append(append(inner, dst.To4()...), dest.To4()...)
	msg = append(append(msg, inner...), 0, 9, 0, 9, 0, 8, 0, 0)
	binary.BigEndian.PutUint16(msg[2:], checksum(msg))
	return IP4(src, dst, unix.IPPROTO_ICMP, msg)
}

// DHCPOffer is the start of a DHCP server's answer (UDP 67 to 68) to
// broadcast: what a client takes an address and router from.
func DHCPOffer(src net.IP, mac net.HardwareAddr) []byte {
	bootp := make([]byte, 240)
	bootp[0], bootp[1], bootp[2] = 2, 1, 6
	copy(bootp[28:], mac)
	copy(bootp[236:], []byte{99, 130, 83, 99})
	return IP4(src, net.IPv4bcast, unix.IPPROTO_UDP, udp(67, 68, bootp))
}

// DHCP6Advertise is a DHCPv6 server's advertise (UDP 547 to 546) from src
// to dst.
func DHCP6Advertise(src, dst net.IP) []byte {
	return UDP6(src, dst, 547, 546, []byte{2, 0, 0, 1})
}

// IP4 is an IPv4 packet with its header checksum.
func IP4(src, dst net.IP, proto byte, payload []byte) []byte {
	h := []byte{0x45, 0}
	h = binary.BigEndian.AppendUint16(h, uint16(20+len(payload)))
	h = append(h, 0, 0, 0x40, 0, 64, proto, 0, 0)
	h = append(h, src.To4()...)
	h = append(h, dst.To4()...)
	binary.BigEndian.PutUint16(h[10:], checksum(h))
	return append(h, payload...)
}

// UDP6 is an IPv6 UDP datagram with its checksum.
func UDP6(src, dst net.IP, sport, dport uint16, data []byte) []byte {
	u := udp(sport, dport, data)
	pseudo := append(append([]byte{}, src.To16()...), dst.To16()...)
	pseudo = binary.BigEndian.AppendUint32(pseudo, uint32(len(u)))
	pseudo = append(pseudo, 0, 0, 0, unix.IPPROTO_UDP)
	binary.BigEndian.PutUint16(u[6:], checksum(append(pseudo, u...)))
	return IP6(src, dst, unix.IPPROTO_UDP, u)
}

// udp is a UDP header and data, checksum 0 (none, for IPv4).
func udp(sport, dport uint16, data []byte) []byte {
	u := binary.BigEndian.AppendUint16(nil, sport)
	u = binary.BigEndian.AppendUint16(u, dport)
	u = binary.BigEndian.AppendUint16(u, uint16(8+len(data)))
	return append(binary.BigEndian.AppendUint16(u, 0), data...)
}
