package netpolicy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// protocolNames are the protocols an allow's text names, by number; any
// other is written as its number.
var protocolNames = map[uint8]string{6: "tcp", 17: "udp", 132: "sctp"}

// FormatAllow writes one allow as a NodePolicy set lists it:
// "<prefix> <protocol> <port>[-<port>]", the protocol tcp, udp, sctp,
// a number or any. ParseAllow reads it back; the controller writes and
// the agent reads with these two alone.
func FormatAllow(a Allow) string {
	proto := "any"
	if !a.AnyProtocol {
		proto = protocolNames[a.Protocol]
		if proto == "" {
			proto = strconv.Itoa(int(a.Protocol))
		}
	}
	ports := strconv.Itoa(int(a.PortLo))
	if a.PortHi != a.PortLo {
		ports += "-" + strconv.Itoa(int(a.PortHi))
	}
	return a.Peer.Masked().String() + " " + proto + " " + ports
}

// ParseAllow reads what FormatAllow wrote.
func ParseAllow(s string) (Allow, error) {
	var a Allow
	f := strings.Fields(s)
	if len(f) != 3 {
		return a, fmt.Errorf("allow %q: want \"<prefix> <protocol> <ports>\"", s)
	}
	peer, err := netip.ParsePrefix(f[0])
	if err != nil {
		return a, fmt.Errorf("allow %q: %w", s, err)
	}
	a.Peer = peer.Masked()
	switch f[1] {
	case "any":
		a.AnyProtocol = true
	case "tcp":
		a.Protocol = 6
	case "udp":
		a.Protocol = 17
	case "sctp":
		a.Protocol = 132
	default:
		n, err := strconv.ParseUint(f[1], 10, 8)
		if err != nil {
			return a, fmt.Errorf("allow %q: protocol %q is not tcp, udp, sctp, any or a number up to 255", s, f[1])
		}
		a.Protocol = uint8(n)
	}
	lo, hi, ranged := strings.Cut(f[2], "-")
	if !ranged {
		hi = lo
	}
	l, errLo := strconv.ParseUint(lo, 10, 16)
	h, errHi := strconv.ParseUint(hi, 10, 16)
	if errLo != nil || errHi != nil || l > h {
		return a, fmt.Errorf("allow %q: ports %q are not a port or an ascending range up to 65535", s, f[2])
	}
	a.PortLo, a.PortHi = uint16(l), uint16(h)
	return a, nil
}
