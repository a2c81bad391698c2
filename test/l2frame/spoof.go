package l2frame

import (
	"net"

	"golang.org/x/sys/unix"
)

// Host is one pod's identity on a network.
type Host struct {
	MAC       net.HardwareAddr
	IP4, IP6  net.IP
	LinkLocal net.IP
}

// Case is one frame a pod sends and whether port security lets it pass.
type Case struct {
	Name   string
	Frame  []byte
	Passes bool
}

// Attack is what a pod with raw sockets (self) sends to pose as victim
// towards peer: its own legitimate ARP and neighbour advertisement first
// (they must arrive, or the observer sees nothing at all), then a frame with
// victim's source MAC, one with victim's IPv4 and IPv6 source, a gratuitous
// ARP and an ARP reply in victim's name, and a neighbour advertisement
// overriding victim's IPv6 address; then what only a router sends: a router
// advertisement (a default route, an MTU of 1280 and a prefix), ICMPv6 and
// ICMP redirects and DHCP / DHCPv6 server answers.
func Attack(self, victim, peer Host) []Case {
	allNodes := net.ParseIP("ff02::1")
	return []Case{
		{"own arp request", Eth(Broadcast, self.MAC, unix.ETH_P_ARP, ARP(1, self.MAC, self.IP4, make(net.HardwareAddr, 6), peer.IP4)), true},
		{"own neighbour advertisement", Eth(AllNodes, self.MAC, unix.ETH_P_IPV6, NA(self.LinkLocal, allNodes, self.IP6, 0x20, self.MAC)), true},
		{"victim's source mac", Eth(peer.MAC, victim.MAC, unix.ETH_P_IP, UDP4(victim.IP4, peer.IP4, []byte("spoofed mac"))), false},
		{"victim's ipv4 source", Eth(peer.MAC, self.MAC, unix.ETH_P_IP, UDP4(victim.IP4, peer.IP4, []byte("spoofed ipv4"))), false},
		{"gratuitous arp for victim's ipv4", Eth(Broadcast, self.MAC, unix.ETH_P_ARP, ARP(1, self.MAC, victim.IP4, Broadcast, victim.IP4)), false},
		{"arp reply as victim", Eth(peer.MAC, self.MAC, unix.ETH_P_ARP, ARP(2, self.MAC, victim.IP4, peer.MAC, peer.IP4)), false},
		{"victim's ipv6 source", Eth(peer.MAC, self.MAC, unix.ETH_P_IPV6, ICMP6(victim.IP6, peer.IP6, 128, []byte{0, 1, 0, 1})), false},
		{"neighbour advertisement overriding victim's ipv6", Eth(AllNodes, self.MAC, unix.ETH_P_IPV6, NA(self.LinkLocal, allNodes, victim.IP6, 0x20, self.MAC)), false},
		{"router advertisement", Eth(AllNodes, self.MAC, unix.ETH_P_IPV6, RA(self.LinkLocal, self.MAC, 1280, RogueRAPrefix)), false},
		{"icmpv6 redirect", Eth(peer.MAC, self.MAC, unix.ETH_P_IPV6, Redirect6(self.LinkLocal, peer.LinkLocal, self.LinkLocal, victim.IP6)), false},
		{"icmp redirect", Eth(peer.MAC, self.MAC, unix.ETH_P_IP, Redirect4(self.IP4, peer.IP4, self.IP4, victim.IP4)), false},
		{"dhcp offer", Eth(Broadcast, self.MAC, unix.ETH_P_IP, DHCPOffer(self.IP4, peer.MAC)), false},
		{"dhcpv6 advertise", Eth(peer.MAC, self.MAC, unix.ETH_P_IPV6, DHCP6Advertise(self.LinkLocal, peer.LinkLocal)), false},
	}
}

// RogueRAPrefix is the prefix Attack's router advertisement offers: a pod
// that took it has an address in it.
var RogueRAPrefix = net.ParseIP("fd00:bad::")

// Marker is a frame every port passes (self's own MAC and IPv4, to
// broadcast) carrying text: sent after a batch of frames, it tells an
// observer that the batch is over.
func Marker(self Host, text string) []byte {
	return Eth(Broadcast, self.MAC, unix.ETH_P_IP, UDP4(self.IP4, net.IPv4bcast, []byte(text)))
}
