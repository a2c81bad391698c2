package rules

import "net/netip"

// ReservedInPool says why addr, inside the masked pool, may never be given
// to a pod ("network address", "broadcast address"), or "" when it may.
// The policy (static addresses) and the IPAM (allocation) share this one
// rule so that they never disagree. /31, /32, /127 and /128 pools have no
// reserved addresses (RFC 3021 point-to-point links).
func ReservedInPool(pool netip.Prefix, addr netip.Addr) string {
	if pool.Addr().BitLen()-pool.Bits() <= 1 {
		return ""
	}
	if addr == pool.Addr() {
		return "network address"
	}
	if addr.Is4() && addr == LastInPool(pool) {
		return "broadcast address"
	}
	return ""
}

// LastInPool is the highest address of a masked pool.
func LastInPool(pool netip.Prefix) netip.Addr {
	b := pool.Addr().AsSlice()
	for i := pool.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	addr, _ := netip.AddrFromSlice(b)
	return addr
}
