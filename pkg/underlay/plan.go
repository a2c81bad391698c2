package underlay

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
)

// Family is an underlay's address family.
type Family uint8

// The two underlay families.
const (
	IPv4 Family = 4
	IPv6 Family = 6
)

// Proto is a tunnel's transport protocol (an IANA protocol number).
type Proto uint8

// UDP carries VXLAN and every other UDP encapsulation.
const UDP Proto = 17

// Segment picks one segment of a tunnel port by its identifier in the
// tunnel header: Len bytes (1 to 4) at Offset of the transport header
// equal Value.
type Segment struct {
	Offset uint32
	Len    uint32
	Value  uint32
}

// Tunnel is one overlay segment that reaches this node: the packets that
// carry it and the underlay addresses they may come from.
type Tunnel struct {
	// Name names the tunnel in set names: letters, digits and '-'.
	Name   string
	Proto  Proto
	Port   uint16
	Family Family
	// Segment, when set, limits the tunnel to one segment of the port;
	// nil means every packet to the port.
	Segment *Segment
	// Peers are the addresses allowed to send it, of Family.
	Peers []netip.Addr
}

// VXLANSegment picks a VXLAN network by its VNI: the 24 bits after the
// UDP header (8 bytes) and the VXLAN flags and reserved bytes (4).
func VXLANSegment(vni uint32) *Segment {
	return &Segment{Offset: 12, Len: 3, Value: vni}
}

// VXLAN is the tunnel of one VXLAN network.
func VXLAN(port uint16, vni uint32, family Family, peers []netip.Addr) Tunnel {
	return Tunnel{Name: fmt.Sprintf("vxlan-%d-%d", port, vni), Proto: UDP, Port: port, Family: family, Segment: VXLANSegment(vni), Peers: peers}
}

// Hook is where a rule applies.
type Hook uint8

// Input filters packets to the node itself; Forward, packets it routes
// (a pod's, before any masquerading).
const (
	Input Hook = iota
	Forward
)

// Check is what a rule drops.
type Check uint8

const (
	// NotFromSet drops packets whose source is not in the rule's set.
	NotFromSet Check = iota
	// NotOnReversePath drops packets that arrive on an interface other
	// than the one the node would route their source through (a pod
	// spoofing a peer's address).
	NotOnReversePath
	// ToSet drops packets whose destination is in the rule's set.
	ToSet
	// Fragmented drops IPv6 fragments to the port. The kernel reassembles
	// IPv6 after the input hook, so a datagram split so that its first
	// fragment holds only the UDP header reaches the tunnel's socket
	// whole, while the rules judging its segment cannot read it (IPv4 is
	// reassembled before the hook, where the other rules see it whole).
	// Tunnel devices are sized not to fragment (their MTU is the
	// underlay's less their overhead), so a peer sends none.
	Fragmented
)

// Set is a named set of addresses of one family.
type Set struct {
	Name   string
	Family Family
	Addrs  []netip.Addr
}

// Rule drops the packets of Proto to Port of Family (and Segment) that
// fail Check (against Set, for the checks that read one).
type Rule struct {
	Hook    Hook
	Family  Family
	Proto   Proto
	Port    uint16
	Segment *Segment
	Check   Check
	Set     string
}

// Ruleset is the whole table: empty means no table.
type Ruleset struct {
	Sets  []Set
	Rules []Rule
}

// Empty reports whether the ruleset needs no table.
func (r Ruleset) Empty() bool { return len(r.Sets) == 0 && len(r.Rules) == 0 }

// portKey groups tunnels that share a socket.
type portKey struct {
	proto  Proto
	port   uint16
	family Family
}

// Plan turns the tunnels of this node into the table: per tunnel, a set of
// its peers, a rule dropping its packets from any other source and one
// dropping those that fail the reverse-path check; per port and family, a
// set of every peer of the port and a forward rule dropping packets routed
// to them, and for IPv6 a rule dropping fragments to the port. The result is sorted, so equal tunnels give equal rulesets.
func Plan(tunnels []Tunnel) (Ruleset, error) {
	if err := validate(tunnels); err != nil {
		return Ruleset{}, err
	}
	ts := slices.Clone(tunnels)
	slices.SortFunc(ts, func(a, b Tunnel) int { return cmp.Compare(a.Name, b.Name) })
	var out Ruleset
	byPort := map[portKey][]netip.Addr{}
	for _, t := range ts {
		set := Set{Name: "from-" + t.Name + "-v" + fmt.Sprint(t.Family), Family: t.Family, Addrs: sortedUnique(t.Peers)}
		out.Sets = append(out.Sets, set)
		for _, c := range []Check{NotFromSet, NotOnReversePath} {
			r := Rule{Hook: Input, Family: t.Family, Proto: t.Proto, Port: t.Port, Segment: t.Segment, Check: c}
			if c == NotFromSet {
				r.Set = set.Name
			}
			out.Rules = append(out.Rules, r)
		}
		k := portKey{t.Proto, t.Port, t.Family}
		byPort[k] = append(byPort[k], t.Peers...)
	}
	keys := make([]portKey, 0, len(byPort))
	for k := range byPort {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b portKey) int {
		return cmp.Or(cmp.Compare(a.proto, b.proto), cmp.Compare(a.port, b.port), cmp.Compare(a.family, b.family))
	})
	for _, k := range keys {
		name := fmt.Sprintf("peers-%d-%d-v%d", k.proto, k.port, k.family)
		out.Sets = append(out.Sets, Set{Name: name, Family: k.family, Addrs: sortedUnique(byPort[k])})
		out.Rules = append(out.Rules, Rule{Hook: Forward, Family: k.family, Proto: k.proto, Port: k.port, Check: ToSet, Set: name})
		if k.family == IPv6 {
			out.Rules = append(out.Rules, Rule{Hook: Input, Family: k.family, Proto: k.proto, Port: k.port, Check: Fragmented})
		}
	}
	return out, nil
}

// validate refuses tunnels the table cannot express.
func validate(tunnels []Tunnel) error {
	var errs []error
	names := map[string]bool{}
	for _, t := range tunnels {
		switch {
		case !validName(t.Name):
			errs = append(errs, fmt.Errorf("tunnel %q: name must be 1-64 letters, digits or '-'", t.Name))
		case names[t.Name]:
			errs = append(errs, fmt.Errorf("tunnel %q: listed twice", t.Name))
		case t.Port == 0:
			errs = append(errs, fmt.Errorf("tunnel %q: port 0", t.Name))
		case t.Family != IPv4 && t.Family != IPv6:
			errs = append(errs, fmt.Errorf("tunnel %q: family %d is neither 4 nor 6", t.Name, t.Family))
		case t.Segment != nil && (t.Segment.Len < 1 || t.Segment.Len > 4 || t.Segment.Len < 4 && t.Segment.Value >= 1<<(8*t.Segment.Len)):
			errs = append(errs, fmt.Errorf("tunnel %q: segment value %d does not fit %d bytes (1-4)", t.Name, t.Segment.Value, t.Segment.Len))
		}
		names[t.Name] = true
		for _, p := range t.Peers {
			if !p.IsValid() || (p.Is4() || p.Is4In6()) != (t.Family == IPv4) {
				errs = append(errs, fmt.Errorf("tunnel %q: peer %v is not an IPv%d address", t.Name, p, t.Family))
			}
		}
	}
	return errors.Join(errs...)
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// sortedUnique is the addresses unmapped, sorted, without duplicates.
func sortedUnique(in []netip.Addr) []netip.Addr {
	out := make([]netip.Addr, 0, len(in))
	for _, a := range in {
		out = append(out, a.Unmap())
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}
