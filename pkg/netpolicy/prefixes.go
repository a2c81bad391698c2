package netpolicy

import (
	"net/netip"
	"slices"
)

// Prefixes is a set of address prefixes, kept sorted with no prefix
// inside another.
type Prefixes []netip.Prefix

// normalize sorts ps, masks each, drops any prefix inside another and
// joins two halves into their whole: the same addresses as the fewest
// prefixes (pods' addresses, handed out in order, join into a few).
func normalize(ps []netip.Prefix) Prefixes {
	out := make([]netip.Prefix, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Masked())
	}
	slices.SortFunc(out, comparePrefix)
	var kept Prefixes
	for _, p := range out {
		if n := len(kept); n > 0 && kept[n-1].Bits() <= p.Bits() && kept[n-1].Contains(p.Addr()) {
			continue
		}
		for n := len(kept); n > 0 && p.Bits() > 0 && kept[n-1].Bits() == p.Bits(); n = len(kept) {
			whole := netip.PrefixFrom(p.Addr(), p.Bits()-1).Masked()
			if netip.PrefixFrom(kept[n-1].Addr(), p.Bits()-1).Masked() != whole {
				break
			}
			kept, p = kept[:n-1], whole
		}
		kept = append(kept, p)
	}
	return kept
}

// comparePrefix orders by address, then shorter prefix first, so that a
// prefix comes before those inside it.
func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

// hostPrefix is one address as a prefix of its full length.
func hostPrefix(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen())
}

// overlaps says whether two prefixes share an address; then one holds
// the other.
func overlaps(a, b netip.Prefix) bool {
	return a.Addr().Is4() == b.Addr().Is4() && a.Overlaps(b)
}

// intersect is the addresses in both sets. Each set's prefixes are
// sorted and disjoint, so one pass over both finds every overlap.
func intersect(a, b Prefixes) Prefixes {
	var out []netip.Prefix
	for i, j := 0, 0; i < len(a) && j < len(b); {
		p, q := a[i], b[j]
		if overlaps(p, q) {
			if p.Bits() >= q.Bits() {
				out = append(out, p)
			} else {
				out = append(out, q)
			}
		}
		// Step past the prefix that ends first.
		if lastOf(p).Less(lastOf(q)) {
			i++
		} else {
			j++
		}
	}
	return normalize(out)
}

// lastOf is the last address of a prefix.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// subtract is the addresses of p outside ex, as the fewest prefixes.
func subtract(p, ex netip.Prefix) []netip.Prefix {
	p, ex = p.Masked(), ex.Masked()
	if !overlaps(p, ex) {
		return []netip.Prefix{p}
	}
	if ex.Bits() <= p.Bits() {
		return nil
	}
	// Halve p: keep the half without ex whole, split the other further.
	lo, hi := halves(p)
	if lo.Contains(ex.Addr()) {
		return append([]netip.Prefix{hi}, subtract(lo, ex)...)
	}
	return append([]netip.Prefix{lo}, subtract(hi, ex)...)
}

// halves splits a prefix in its two halves.
func halves(p netip.Prefix) (lo, hi netip.Prefix) {
	bits := p.Bits() + 1
	lo = netip.PrefixFrom(p.Addr(), bits)
	b := p.Addr().AsSlice()
	i := p.Bits()
	b[i/8] |= 0x80 >> (i % 8)
	a, _ := netip.AddrFromSlice(b)
	return lo, netip.PrefixFrom(a, bits)
}

// except is p without each prefix of excepts.
func except(p netip.Prefix, excepts []netip.Prefix) Prefixes {
	out := []netip.Prefix{p.Masked()}
	for _, ex := range excepts {
		var next []netip.Prefix
		for _, q := range out {
			next = append(next, subtract(q, ex)...)
		}
		out = next
	}
	return normalize(out)
}
