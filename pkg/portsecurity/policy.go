package portsecurity

import (
	"podnet.io/podnet/pkg/netpolicy/filter"

	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
)

// A link's policy says whom the pod may talk with through it, where port
// security says who it may claim to be. It lives in a table of its own
// (PolicyTableName) in the pod's netns, made only of set elements shared
// by the pod's links: a link is isolated in a direction when its name is
// in that direction's set, and then passes only what an element of its
// name allows, by peer prefix, protocol and port range. Replies to what
// was allowed pass (conntrack), and so does IPv6 neighbour and router
// discovery, without which no address works.

// The filter's content is package filter's: netpolicy compiles it, the
// agent writes it here.
type (
	PolicyPort      = filter.PolicyPort
	PolicyDirection = filter.PolicyDirection
	Allow           = filter.Allow
)

// policyKey is one element of a direction's address set: the peer's
// first and last address, the protocol range, the port range and the
// port's name, each part padded to 4 bytes as nftables joins them.
type policyKey struct {
	v6         bool
	start, end []byte
}

// policyKeys are the elements of a direction of the port.
func policyKeys(port string, d PolicyDirection) ([]policyKey, error) {
	if err := validateName(port); err != nil {
		return nil, err
	}
	var out []policyKey
	for _, a := range d.Allow {
		if !a.Peer.IsValid() {
			return nil, fmt.Errorf("port %q: allow of no peer", port)
		}
		if a.PortLo > a.PortHi {
			return nil, fmt.Errorf("port %q: port range %d-%d is descending", port, a.PortLo, a.PortHi)
		}
		p := a.Peer.Masked()
		protoLo, protoHi := a.Protocol, a.Protocol
		if a.AnyProtocol {
			protoLo, protoHi = 0, 255
		}
		name := ifname(port)
		out = append(out, policyKey{
			v6:    p.Addr().Is6(),
			start: joinKey(p.Addr().AsSlice(), protoLo, a.PortLo, name),
			end:   joinKey(lastAddr(p).AsSlice(), protoHi, a.PortHi, name),
		})
	}
	slices.SortFunc(out, func(a, b policyKey) int { return slices.Compare(a.start, b.start) })
	return out, nil
}

func joinKey(addr []byte, proto uint8, port uint16, name []byte) []byte {
	k := slices.Clone(addr)
	k = append(k, proto, 0, 0, 0)
	k = binary.BigEndian.AppendUint16(k, port)
	k = append(k, 0, 0)
	return append(k, name...)
}

// lastAddr is the last address of a prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
