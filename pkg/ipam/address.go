package ipam

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/bits"
	"net"
	"net/netip"
	"strings"
)

// maxHostIndex bounds the host indices searched in one pool. A /64 has 2^64
// addresses; searching only the first 2^63 of them loses nothing in practice
// and keeps every index sum below 2^64, so the walk needs no big integers.
const maxHostIndex = uint64(1) << 63

// ClaimName is the IPClaim name of one address in one address space
// (SpaceName): "<address>.<space hash>", the address with
// IPv4 dots and IPv6 colons written as dashes ("192-168-0-10.s3f…"). The
// name holds no network, profile or pool on purpose: the address on one
// layer-2 domain is what two pods must never share, and this name makes
// the API server refuse a second claim of it through any network, profile
// or pool of that domain, overlapping or not, while another bridge or link
// may hand out the same address. IPv6 is written fully expanded (32 hex
// digits in 8 groups) because that form is both canonical (one address,
// one name) and always a valid DNS label; the compressed form ("::1")
// would start or end a label with a dash. The space is hashed because
// bridge names may hold characters a name may not (upper case,
// underscores).
func ClaimName(space string, addr netip.Addr) string {
	return addrLabel(addr) + "." + spaceLabel(space)
}

// FormerClaimName is the name address claims had before they were keyed
// by address space: the address alone, one name for the whole cluster.
// Allocation still checks it, so an address held by such a claim is never
// handed out again, in any address space, while its pod lives.
func FormerClaimName(addr netip.Addr) string {
	return addrLabel(addr)
}

// LegacyClaimName is the name address claims had before they were keyed by
// the address: "<network>.<address>". Allocation still checks it, like
// FormerClaimName.
func LegacyClaimName(network string, addr netip.Addr) string {
	return network + "." + addrLabel(addr)
}

// SlotName is the IPClaim name of quota slot slot of a namespace in one IP
// family of an address space: "<space hash>.<namespace>.<ipv4|ipv6>.<slot>".
// Each part is a DNS label, so the name is a DNS subdomain of at most 91
// characters, and its three dots tell it from an address claim (one dot)
// and from a slot of the former scheme (FormerSlotName, two dots).
func SlotName(space string, pool netip.Prefix, namespace string, slot int) string {
	family := "ipv6"
	if pool.Addr().Is4() {
		family = "ipv4"
	}
	return fmt.Sprintf("%s.%s.%s.%d", spaceLabel(space), namespace, family, slot)
}

// FormerSlotName is the name quota slots had before quotas were kept per
// address space: one quota per masked pool, "<pool>.<namespace>.<slot>"
// ("10-1-0-0-24.tenant-a.3"). Such slots stay held while their address
// is.
func FormerSlotName(pool netip.Prefix, namespace string, slot int) string {
	return fmt.Sprintf("%s-%d.%s.%d", addrLabel(pool.Addr()), pool.Bits(), namespace, slot)
}

// spaceLabel is the DNS label of an address space in claim names: "s" and
// 64 bits of its SHA-256, far from any chance collision among the few
// spaces of a cluster, and never a valid address label (those are
// decimal groups or 32 hex digits in dashed groups).
func spaceLabel(space string) string {
	sum := sha256.Sum256([]byte(space))
	return fmt.Sprintf("s%x", sum[:8])
}

// addrLabel writes an address as a DNS label.
func addrLabel(addr netip.Addr) string {
	text := addr.String()
	if addr.Is6() {
		text = addr.StringExpanded()
	}
	return strings.NewReplacer(".", "-", ":", "-").Replace(text)
}

// hostRange is the span of host indices (offsets from the pool's first
// address) that allocation may hand out: [first, first+count).
type hostRange struct {
	first, count uint64
}

// usableHosts returns the host indices allocation may use in a masked pool.
// The network address is never handed out (IPv4's network address; IPv6's
// subnet-router anycast address, RFC 4291), nor IPv4's broadcast address.
// Point-to-point prefixes (/31, RFC 3021; /127, RFC 6164) and single-address
// prefixes (/32, /128) have no such addresses, so every address is usable.
func usableHosts(pool netip.Prefix) hostRange {
	hostBits := pool.Addr().BitLen() - pool.Bits()
	if hostBits <= 1 {
		return hostRange{first: 0, count: 1 << hostBits}
	}
	size := maxHostIndex
	if hostBits < 63 {
		size = uint64(1) << hostBits
	}
	if pool.Addr().Is4() {
		return hostRange{first: 1, count: size - 2} // no network, no broadcast
	}
	return hostRange{first: 1, count: size - 1} // no subnet-router anycast
}

// addrAt is the address at host index i of a masked pool (i is within the
// pool, so no carry leaves the pool).
func addrAt(pool netip.Prefix, i uint64) netip.Addr {
	if pool.Addr().Is4() {
		b := pool.Addr().As4()
		binary.BigEndian.PutUint32(b[:], binary.BigEndian.Uint32(b[:])+uint32(i))
		return netip.AddrFrom4(b)
	}
	b := pool.Addr().As16()
	lo, carry := bits.Add64(binary.BigEndian.Uint64(b[8:]), i, 0)
	binary.BigEndian.PutUint64(b[8:], lo)
	binary.BigEndian.PutUint64(b[:8], binary.BigEndian.Uint64(b[:8])+carry)
	return netip.AddrFrom16(b)
}

// walk visits every index of a hostRange exactly once, starting at a hashed
// offset and stepping by a hashed stride that is coprime with the range size.
// Hashing the start spreads concurrent allocators over the pool so they
// rarely race for the same address; the stride (rather than +1) keeps them
// from converging on the free address at the end of a run of claimed ones.
// The same key always yields the same sequence, so a retry after a crash
// walks to the address it claimed before.
type walk struct {
	r                    hostRange
	cur, stride, visited uint64
}

// newWalk starts a walk over r keyed by key.
func newWalk(r hostRange, key string) *walk {
	sum := sha256.Sum256([]byte(key))
	start := binary.BigEndian.Uint64(sum[0:8]) % r.count
	return &walk{r: r, cur: start, stride: coprimeStride(binary.BigEndian.Uint64(sum[8:16]), r.count)}
}

// coprimeStride picks a stride in [1, n) (1 when n <= 2) with gcd(stride, n)
// = 1, so that stepping by it modulo n reaches every residue.
func coprimeStride(h, n uint64) uint64 {
	if n <= 2 {
		return 1
	}
	s := 1 + h%(n-1)
	for gcd(s, n) != 1 {
		s = 1 + s%(n-1)
	}
	return s
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// next returns the next host index, or false when all have been visited.
func (w *walk) next() (uint64, bool) {
	if w.visited == w.r.count {
		return 0, false
	}
	i := w.r.first + w.cur
	w.visited++
	// cur and stride are below count <= 2^63, so the sum cannot overflow.
	w.cur += w.stride
	if w.cur >= w.r.count {
		w.cur -= w.r.count
	}
	return i, true
}

// toIPNet converts an address and prefix length to the net.IPNet the
// dataplane takes.
func toIPNet(addr netip.Addr, prefixLen int) net.IPNet {
	return net.IPNet{IP: net.IP(addr.AsSlice()), Mask: net.CIDRMask(prefixLen, addr.BitLen())}
}

// PoolSize is how many addresses allocation may hand out from pool (masked
// or not; see usableHosts): no network or broadcast address, gateways not
// subtracted, and a pool larger than 2^63 addresses counts as 2^63.
func PoolSize(pool netip.Prefix) uint64 {
	return usableHosts(pool.Masked()).count
}
