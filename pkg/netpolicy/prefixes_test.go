package netpolicy

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
)

// TestPrefixSets: normalize keeps exactly the addresses it was given, as
// sorted disjoint prefixes with no two halves of one whole left apart,
// and intersect keeps exactly the addresses in both sets; checked against
// membership of every address of a small space, over random sets.
func TestPrefixSets(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	random := func() []netip.Prefix {
		var ps []netip.Prefix
		for range r.IntN(12) {
			a := netip.AddrFrom4([4]byte{10, 0, 0, byte(r.IntN(256))})
			ps = append(ps, netip.PrefixFrom(a, 24+r.IntN(9)).Masked())
		}
		return ps
	}
	in := func(ps []netip.Prefix, a netip.Addr) bool {
		return slices.ContainsFunc(ps, func(p netip.Prefix) bool { return p.Contains(a) })
	}
	for range 2000 {
		x, y := random(), random()
		nx, ny := normalize(x), normalize(y)
		both := intersect(nx, ny)
		for i := range 256 {
			a := netip.AddrFrom4([4]byte{10, 0, 0, byte(i)})
			if in(nx, a) != in(x, a) {
				t.Fatalf("normalize(%v) = %v: %v differs", x, nx, a)
			}
			if in(both, a) != (in(x, a) && in(y, a)) {
				t.Fatalf("intersect(%v, %v) = %v: %v differs", nx, ny, both, a)
			}
		}
		for i := 1; i < len(nx); i++ {
			if comparePrefix(nx[i-1], nx[i]) >= 0 || overlaps(nx[i-1], nx[i]) {
				t.Fatalf("normalize(%v) = %v: not sorted and disjoint", x, nx)
			}
			if nx[i-1].Bits() == nx[i].Bits() && netip.PrefixFrom(nx[i-1].Addr(), nx[i].Bits()-1).Masked() == netip.PrefixFrom(nx[i].Addr(), nx[i].Bits()-1).Masked() {
				t.Fatalf("normalize(%v) = %v: halves %v and %v not joined", x, nx, nx[i-1], nx[i])
			}
		}
	}
	if got := normalize([]netip.Prefix{netip.MustParsePrefix("10.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/32"), netip.MustParsePrefix("10.0.0.2/31")}); !slices.Equal(got, Prefixes{netip.MustParsePrefix("10.0.0.0/30")}) {
		t.Errorf("four addresses in order = %v, want 10.0.0.0/30", got)
	}
}
