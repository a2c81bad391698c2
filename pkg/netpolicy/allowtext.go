package netpolicy

import (
	"fmt"
	"strconv"
	"strings"
)

// protocolNames are the protocols an allow's text names, by number; any
// other is written as its number.
var protocolNames = map[uint8]string{6: "tcp", 17: "udp", 132: "sctp"}

// formatTraffic writes an allow's protocol and ports as a NodePolicy set
// lists them: "<protocol> <port>[-<port>]", the protocol tcp, udp, sctp,
// a number or any. parseTraffic reads it back.
func formatTraffic(a Allow) string {
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
	return proto + " " + ports
}

// parseTraffic reads what formatTraffic wrote into a (its peer aside).
func parseTraffic(proto, ports string) (Allow, error) {
	var a Allow
	switch proto {
	case "any":
		a.AnyProtocol = true
	case "tcp":
		a.Protocol = 6
	case "udp":
		a.Protocol = 17
	case "sctp":
		a.Protocol = 132
	default:
		n, err := strconv.ParseUint(proto, 10, 8)
		if err != nil {
			return a, fmt.Errorf("protocol %q is not tcp, udp, sctp, any or a number up to 255", proto)
		}
		a.Protocol = uint8(n)
	}
	lo, hi, ranged := strings.Cut(ports, "-")
	if !ranged {
		hi = lo
	}
	l, errLo := strconv.ParseUint(lo, 10, 16)
	h, errHi := strconv.ParseUint(hi, 10, 16)
	if errLo != nil || errHi != nil || l > h {
		return a, fmt.Errorf("ports %q are not a port or an ascending range up to 65535", ports)
	}
	a.PortLo, a.PortHi = uint16(l), uint16(h)
	return a, nil
}
