package netpolicy

import (
	"net/netip"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// everyone is every address of both families.
var everyone = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}

// protocols are the transport protocols a policy port names, by number.
var protocols = map[corev1.Protocol]uint8{
	corev1.ProtocolTCP:  unix.IPPROTO_TCP,
	corev1.ProtocolUDP:  unix.IPPROTO_UDP,
	corev1.ProtocolSCTP: unix.IPPROTO_SCTP,
}

// Compile turns a direction's verdict into what the pod link's filter
// holds (pkg/portsecurity): one element per peer prefix and port of each
// rule. TestCompileAgreesWithAllows holds it to Allows.
func Compile(d Direction) PolicyDirection {
	out := PolicyDirection{Isolated: d.Isolated}
	if !d.Isolated {
		return out
	}
	for _, r := range d.Rules {
		peers := []netip.Prefix(r.Peers)
		if r.Any {
			peers = everyone
		}
		for _, peer := range peers {
			if r.Ports == nil {
				out.Allow = append(out.Allow, Allow{Peer: peer, AnyProtocol: true, PortHi: 65535})
				continue
			}
			for _, p := range r.Ports {
				a := Allow{Peer: peer, Protocol: protocols[p.Protocol], PortLo: uint16(p.Port), PortHi: uint16(p.Port)}
				switch {
				case p.Port == 0:
					a.PortLo, a.PortHi = 0, 65535
				case p.EndPort != 0:
					a.PortHi = uint16(p.EndPort)
				}
				out.Allow = append(out.Allow, a)
			}
		}
	}
	return out
}
