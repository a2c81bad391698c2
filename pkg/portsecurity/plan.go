package portsecurity

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
)

// TableName is the bridge-family nftables table podnet owns for port
// security. Nothing else is read or changed.
const TableName = "podnet-portsec"

// maxPortName is IFNAMSIZ less its NUL: a port name longer than that names
// no link.
const maxPortName = 15

// Port is what the planner is told of one pod port.
type Port struct {
	// Name of the node end of the pod's veth, the bridge port.
	Name string
	// MAC of the pod's interface: the only source MAC the port may send.
	MAC net.HardwareAddr
	// Addresses assigned to the pod's interface (IPv4 and IPv6).
	Addresses []net.IP
	// LinkLocal are IPv6 link-local addresses the pod's interface has;
	// the one derived from MAC (EUI-64) is always allowed besides.
	LinkLocal []net.IP
	// Router lets the port send what only a network's routers and DHCP
	// servers send: router advertisements, ICMP and ICMPv6 redirects,
	// DHCP and DHCPv6 server answers.
	Router bool
}

// Plan is what one port may send.
type Plan struct {
	// Port is the bridge port's name (the pod link's, for egress rules).
	Port string
	// MAC is the only source MAC (and ARP sender or ND link-layer address).
	MAC net.HardwareAddr
	// IPv4 are the allowed IPv4 sources and ARP senders (4-byte form,
	// sorted); ARP probes from 0.0.0.0 are allowed besides.
	IPv4 []net.IP
	// IPv6 are the allowed IPv6 sources and neighbour advertisement
	// targets (assigned and link-local, sorted); :: is allowed as a source
	// besides, for duplicate address detection.
	IPv6 []net.IP
	// Router lets the port send router advertisements, redirects and DHCP
	// server answers (Port.Router).
	Router bool
	// Fingerprint names this Plan's content, so that a Plan in place is
	// recognised and left alone.
	Fingerprint string
}

// PlanPort turns a port's identity into the Plan of what it may send. Bad
// input is an error naming the field.
func PlanPort(p Port) (Plan, error) {
	if err := validateName(p.Name); err != nil {
		return Plan{}, err
	}
	if len(p.MAC) != 6 || p.MAC[0]&1 != 0 || bytes.Equal(p.MAC, make([]byte, 6)) {
		return Plan{}, fmt.Errorf("port %q: mac %q: must be a 6-byte unicast address", p.Name, p.MAC)
	}
	pl := Plan{Port: p.Name, MAC: slices.Clone(p.MAC), Router: p.Router}
	for i, a := range p.Addresses {
		if err := pl.add(a, false); err != nil {
			return Plan{}, fmt.Errorf("port %q: addresses[%d]: %w", p.Name, i, err)
		}
	}
	if err := pl.add(LinkLocalOf(p.MAC), true); err != nil {
		return Plan{}, fmt.Errorf("port %q: %w", p.Name, err)
	}
	for i, a := range p.LinkLocal {
		if err := pl.add(a, true); err != nil {
			return Plan{}, fmt.Errorf("port %q: linkLocal[%d]: %w", p.Name, i, err)
		}
	}
	pl.IPv4 = sortedUnique(pl.IPv4)
	pl.IPv6 = sortedUnique(pl.IPv6)
	pl.Fingerprint = fingerprint(pl)
	return pl, nil
}

// validateName checks that a port name can name a link and, with its set
// suffixes, nftables objects.
func validateName(name string) error {
	switch {
	case name == "":
		return errors.New("port name: must not be empty")
	case len(name) > maxPortName:
		return fmt.Errorf("port name %q: at most %d characters", name, maxPortName)
	case name == baseChain:
		return fmt.Errorf("port name %q: taken by the table's base chain", name)
	}
	for _, c := range name {
		if c <= ' ' || c == '/' || c > '~' {
			return fmt.Errorf("port name %q: printable ASCII without spaces or '/' only", name)
		}
	}
	return nil
}

// add puts one address into its family's list; linkLocal says it must be
// an IPv6 link-local address.
func (pl *Plan) add(a net.IP, linkLocal bool) error {
	switch {
	case a == nil || (a.To4() == nil && len(a) != net.IPv6len):
		return fmt.Errorf("address %q: not an IP address", a)
	case a.IsUnspecified() || a.IsMulticast() || a.Equal(net.IPv4bcast):
		return fmt.Errorf("address %s: must be a unicast address", a)
	case linkLocal && (a.To4() != nil || !a.IsLinkLocalUnicast()):
		return fmt.Errorf("address %s: not an IPv6 link-local address", a)
	case a.To4() != nil:
		pl.IPv4 = append(pl.IPv4, slices.Clone(a.To4()))
	default:
		pl.IPv6 = append(pl.IPv6, slices.Clone(a.To16()))
	}
	return nil
}

// LinkLocalOf is the IPv6 link-local address the kernel derives from a MAC
// (modified EUI-64, RFC 4291 appendix A), the default of Linux interfaces.
func LinkLocalOf(mac net.HardwareAddr) net.IP {
	ip := make(net.IP, net.IPv6len)
	ip[0], ip[1] = 0xfe, 0x80
	if len(mac) != 6 {
		return ip
	}
	ip[8] = mac[0] ^ 0x02
	ip[9], ip[10] = mac[1], mac[2]
	ip[11], ip[12] = 0xff, 0xfe
	ip[13], ip[14], ip[15] = mac[3], mac[4], mac[5]
	return ip
}

func sortedUnique(ips []net.IP) []net.IP {
	slices.SortFunc(ips, func(a, b net.IP) int { return bytes.Compare(a, b) })
	return slices.CompactFunc(ips, func(a, b net.IP) bool { return a.Equal(b) })
}

// fingerprint hashes what a Plan allows together with the rule layout's
// version, so that a change of either rewrites the port's chain.
func fingerprint(pl Plan) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\nrouter=%t\n", layoutVersion, pl.Port, pl.MAC, pl.Router)
	for _, a := range pl.IPv4 {
		fmt.Fprintf(h, "%s\n", a)
	}
	for _, a := range pl.IPv6 {
		fmt.Fprintf(h, "%s\n", a)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// layoutVersion changes whenever the rules written for a Plan change, so
// that ports secured by an older agent are rewritten. v4: the bridge
// ports' rules in shared sets.
const layoutVersion = "v4"

// baseChain is the name of the table's one base chain (and of the legacy
// layout's map of ports); a port may not take it, as egress chains are
// named after their links.
const baseChain = "ports"

// SetNames are the names of a per-link chain's address sets (egress, and
// the legacy bridge layout).
func SetNames(port string) (v4, v6 string) {
	return port + "-v4", port + "-v6"
}
