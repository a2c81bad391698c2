package ipam

import (
	"fmt"
	"net/netip"
	"strings"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam/rules"
)

// want is one address an interface must hold: either a given static address
// or any free address of a pool.
type want struct {
	// space is the address space (SpaceName) the claim is
	// made in.
	space string
	// pool is the masked pool the address comes from.
	pool netip.Prefix
	// poolText is the pool as approved, for messages.
	poolText string
	// static, when valid, is the exact address and prefix length asked for.
	static netip.Prefix
	// gateways inside pool, never handed out.
	gateways []netip.Addr
}

// prefixLen is the prefix length the interface gets with the address.
func (w want) prefixLen() int {
	if w.static.IsValid() {
		return w.static.Bits()
	}
	return w.pool.Bits()
}

// planAddresses turns an approval's IPAM section into the addresses one
// interface must hold: every static address, plus one address from each pool
// whose family has no static address. Errors name the field and the value.
func planAddresses(ipam v1alpha1.ApprovedIPAM) ([]want, error) {
	if len(ipam.Pools) == 0 {
		return nil, fmt.Errorf("ipam.pools: at least one pool is required")
	}
	pools := make([]netip.Prefix, len(ipam.Pools))
	for i, text := range ipam.Pools {
		p, err := netip.ParsePrefix(text)
		if err != nil {
			return nil, fmt.Errorf("ipam.pools[%d] %q: not a CIDR: %w", i, text, err)
		}
		if p.Addr().Is4In6() {
			return nil, fmt.Errorf("ipam.pools[%d] %q: IPv4-mapped IPv6 pools are not allowed; write the IPv4 CIDR", i, text)
		}
		pools[i] = p.Masked()
		for j := range i {
			if pools[j].Overlaps(pools[i]) {
				return nil, fmt.Errorf("ipam.pools[%d] %q overlaps ipam.pools[%d] %q", i, text, j, ipam.Pools[j])
			}
		}
	}
	gateways := make([]netip.Addr, len(ipam.Gateways))
	for i, text := range ipam.Gateways {
		g, err := parseAddr(text)
		if err != nil {
			return nil, fmt.Errorf("ipam.gateways[%d] %q: not an IP address: %w", i, text, err)
		}
		gateways[i] = g
	}

	var wants []want
	staticFamily := map[bool]bool{} // keyed by Is4
	for i, text := range ipam.Static {
		s, err := netip.ParsePrefix(text)
		if err != nil {
			return nil, fmt.Errorf("ipam.static[%d] %q: not an address in CIDR form: %w", i, text, err)
		}
		pi := poolOf(pools, s.Addr())
		if pi < 0 {
			return nil, fmt.Errorf("ipam.static[%d] %q: not inside any pool (%s)", i, text, strings.Join(ipam.Pools, ", "))
		}
		if reason := rules.ReservedInPool(pools[pi], s.Addr()); reason != "" {
			return nil, fmt.Errorf("ipam.static[%d] %q: is the %s of pool %s", i, text, reason, ipam.Pools[pi])
		}
		for _, g := range gateways {
			if g == s.Addr() {
				return nil, fmt.Errorf("ipam.static[%d] %q: is a gateway of the network", i, text)
			}
		}
		for _, w := range wants {
			if w.static.Addr() == s.Addr() {
				return nil, fmt.Errorf("ipam.static[%d] %q: the address is listed twice", i, text)
			}
		}
		staticFamily[s.Addr().Is4()] = true
		wants = append(wants, want{space: ipam.AddressSpace, pool: pools[pi], poolText: ipam.Pools[pi], static: s})
	}
	for i, p := range pools {
		if staticFamily[p.Addr().Is4()] {
			continue // a static address of this family replaces allocation
		}
		wants = append(wants, want{space: ipam.AddressSpace, pool: p, poolText: ipam.Pools[i], gateways: gatewaysIn(p, gateways)})
	}
	return wants, nil
}

// parseAddr accepts a bare address or an address in CIDR form.
func parseAddr(text string) (netip.Addr, error) {
	if strings.Contains(text, "/") {
		p, err := netip.ParsePrefix(text)
		return p.Addr(), err
	}
	return netip.ParseAddr(text)
}

// poolOf returns the index of the pool holding addr, or -1.
func poolOf(pools []netip.Prefix, addr netip.Addr) int {
	for i, p := range pools {
		if p.Contains(addr) {
			return i
		}
	}
	return -1
}

func gatewaysIn(pool netip.Prefix, gateways []netip.Addr) []netip.Addr {
	var in []netip.Addr
	for _, g := range gateways {
		if pool.Contains(g) {
			in = append(in, g)
		}
	}
	return in
}

// isGateway reports whether addr is one of w's gateways.
func (w want) isGateway(addr netip.Addr) bool {
	for _, g := range w.gateways {
		if g == addr {
			return true
		}
	}
	return false
}

// matchHeld pairs each want with an address the interface already holds:
// the exact address for a static want, any address of the pool otherwise.
// It returns, per want, the index into held (or -1), and the indices of held
// addresses no want uses, which are to be released.
func matchHeld(wants []want, held []netip.Addr) (match []int, extra []int) {
	used := make([]bool, len(held))
	match = make([]int, len(wants))
	for i, w := range wants {
		match[i] = -1
		for j, h := range held {
			if used[j] {
				continue
			}
			if (w.static.IsValid() && h == w.static.Addr()) ||
				(!w.static.IsValid() && w.pool.Contains(h) && rules.ReservedInPool(w.pool, h) == "" && !w.isGateway(h)) {
				match[i], used[j] = j, true
				break
			}
		}
	}
	for j := range held {
		if !used[j] {
			extra = append(extra, j)
		}
	}
	return match, extra
}
