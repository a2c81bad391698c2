package ipam

import (
	"net/netip"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"podnet.io/podnet/pkg/ipam/rules"
)

// FuzzAddressArithmetic checks, for any pool and walk key, the properties
// allocation rests on: a walk never repeats a host index, every index maps
// to an address inside the pool that the shared reservation rule allows,
// small pools are covered completely, and every address's claim name is a
// valid object name that no other address of the walk shares.
func FuzzAddressArithmetic(f *testing.F) {
	f.Add([]byte{10, 0, 0, 0}, 24, "pod-a/net1")
	f.Add([]byte{10, 0, 0, 0}, 31, "k")
	f.Add([]byte{10, 0, 0, 9}, 32, "")
	f.Add([]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 64, "pod-b/net2")
	f.Add([]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 126, "x")
	f.Add([]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5}, 128, "y")
	f.Add([]byte{255, 255, 255, 0}, 22, "top")
	f.Fuzz(func(t *testing.T, raw []byte, bits int, key string) {
		addr, ok := netip.AddrFromSlice(raw)
		if !ok || bits < 0 || bits > addr.BitLen() {
			return
		}
		pool, err := addr.Prefix(bits)
		if err != nil {
			t.Fatalf("Prefix(%s, %d): %v", addr, bits, err)
		}
		r := usableHosts(pool)
		if r.count == 0 {
			t.Fatalf("pool %s has no usable host", pool)
		}
		// Walk everything in small pools, a bounded prefix of large ones.
		limit := r.count
		if limit > 4096 {
			limit = 4096
		}
		w := newWalk(r, key)
		seen := map[uint64]bool{}
		names := map[string]netip.Addr{}
		for n := uint64(0); n < limit; n++ {
			i, ok := w.next()
			if !ok {
				t.Fatalf("pool %s: walk ended after %d of %d indices", pool, n, r.count)
			}
			if i < r.first || i-r.first >= r.count || seen[i] {
				t.Fatalf("pool %s: index %d outside [%d,+%d) or repeated", pool, i, r.first, r.count)
			}
			seen[i] = true
			a := addrAt(pool, i)
			if !pool.Contains(a) {
				t.Fatalf("pool %s: index %d gives %s outside the pool", pool, i, a)
			}
			if why := rules.ReservedInPool(pool, a); why != "" {
				t.Fatalf("pool %s: index %d gives the %s %s", pool, i, why, a)
			}
			name := ClaimName("pnbr-data.bridge", a)
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				t.Fatalf("claim name %q of %s: %v", name, a, errs)
			}
			if prev, dup := names[name]; dup {
				t.Fatalf("claim name %q shared by %s and %s", name, prev, a)
			}
			names[name] = a
		}
		if limit == r.count {
			if _, more := w.next(); more {
				t.Fatalf("pool %s: walk goes on past all %d indices", pool, r.count)
			}
		}
	})
}
