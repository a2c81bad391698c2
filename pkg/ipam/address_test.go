package ipam

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestUsableHosts(t *testing.T) {
	for _, tc := range []struct {
		pool         string
		first, count uint64
	}{
		{"10.0.0.0/24", 1, 254},
		{"10.0.0.0/30", 1, 2},
		{"10.0.0.0/31", 0, 2}, // RFC 3021: both ends usable
		{"10.0.0.7/32", 0, 1},
		{"10.0.0.0/20", 1, 4094},
		{"0.0.0.0/0", 1, 1<<32 - 2},
		{"fd00::/64", 1, 1<<63 - 1}, // capped search space
		{"fd00::/8", 1, 1<<63 - 1},
		{"fd00::/126", 1, 3}, // no subnet-router anycast, no broadcast in IPv6
		{"fd00::/127", 0, 2}, // RFC 6164
		{"fd00::5/128", 0, 1},
	} {
		got := usableHosts(netip.MustParsePrefix(tc.pool).Masked())
		if got.first != tc.first || got.count != tc.count {
			t.Errorf("usableHosts(%s) = [%d, +%d), want [%d, +%d)", tc.pool, got.first, got.count, tc.first, tc.count)
		}
	}
}

func TestAddrAt(t *testing.T) {
	for _, tc := range []struct {
		pool string
		i    uint64
		want string
	}{
		{"10.0.0.0/24", 1, "10.0.0.1"},
		{"10.0.0.0/24", 254, "10.0.0.254"},
		{"10.0.0.0/20", 256, "10.0.1.0"},
		{"10.0.0.0/20", 4094, "10.0.15.254"},
		{"fd00::/64", 1, "fd00::1"},
		{"fd00::/64", 0x1_0000, "fd00::1:0"},
		{"fd00::/63", 1<<63 - 1, "fd00::7fff:ffff:ffff:ffff"},
		{"fd00:0:0:1::/64", 1<<63 - 1, "fd00:0:0:1:7fff:ffff:ffff:ffff"},
	} {
		if got := addrAt(netip.MustParsePrefix(tc.pool), tc.i); got != netip.MustParseAddr(tc.want) {
			t.Errorf("addrAt(%s, %d) = %s, want %s", tc.pool, tc.i, got, tc.want)
		}
	}
}

func TestClaimName(t *testing.T) {
	space := "pnbr-data.bridge"
	hash := spaceLabel(space)
	for _, tc := range []struct{ addr, want string }{
		{"192.168.0.10", "192-168-0-10"},
		{"fd00::1", "fd00-0000-0000-0000-0000-0000-0000-0001"},
		{"FD00:0:0:0:0:0:0:1", "fd00-0000-0000-0000-0000-0000-0000-0001"}, // one address, one name
		{"::", "0000-0000-0000-0000-0000-0000-0000-0000"},
		{"fd00::", "fd00-0000-0000-0000-0000-0000-0000-0000"},
	} {
		addr := netip.MustParseAddr(tc.addr)
		got := ClaimName(space, addr)
		if got != tc.want+"."+hash {
			t.Errorf("ClaimName(%s, %s) = %q, want %q", space, tc.addr, got, tc.want+"."+hash)
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("ClaimName(%s) = %q is not a DNS subdomain: %v", tc.addr, got, errs)
		}
		if former := FormerClaimName(addr); former != tc.want {
			t.Errorf("FormerClaimName(%s) = %q, want %q", tc.addr, former, tc.want)
		}
		if legacy := LegacyClaimName("data", addr); legacy != "data."+tc.want {
			t.Errorf("LegacyClaimName(data, %s) = %q, want %q", tc.addr, legacy, "data."+tc.want)
		}
		// The same address in another space is another name, and no name
		// of one scheme is ever a name of another.
		other := ClaimName("pnbr-other.bridge", addr)
		names := map[string]bool{got: true, other: true, FormerClaimName(addr): true, LegacyClaimName("data", addr): true}
		if len(names) != 4 {
			t.Errorf("%s: names collide: %v", tc.addr, names)
		}
	}
	// The longest network name and an IPv6 address still fit a legacy name.
	long := fmt.Sprintf("%032d", 0)
	if errs := validation.IsDNS1123Subdomain(LegacyClaimName(long, netip.MustParseAddr("ffff::ffff"))); len(errs) > 0 {
		t.Errorf("long name invalid: %v", errs)
	}
	// Bridge names may hold what claim names may not.
	if errs := validation.IsDNS1123Subdomain(ClaimName("Br_0.bridge", netip.MustParseAddr("ffff::ffff"))); len(errs) > 0 {
		t.Errorf("claim name of an upper-case bridge invalid: %v", errs)
	}
}

// TestSlotName checks that quota slot names are DNS subdomains even for
// the longest namespace, an IPv6 pool and the largest slot, count per
// address space and family (not per pool), and never equal an address
// claim's name (one dot) or a slot of the former scheme (two dots).
func TestSlotName(t *testing.T) {
	longNS := strings.Repeat("n", 63)
	space := "pnbr-data.bridge"
	for _, tc := range []struct {
		pool, ns string
		slot     int
		want     string
	}{
		{"10.1.0.0/24", "tenant-a", 3, spaceLabel(space) + ".tenant-a.ipv4.3"},
		{"10.2.0.0/16", "tenant-a", 3, spaceLabel(space) + ".tenant-a.ipv4.3"}, // another pool, the same quota
		{"fd00:100::/64", "t", 0, spaceLabel(space) + ".t.ipv6.0"},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0/124", longNS, 4095, spaceLabel(space) + "." + longNS + ".ipv6.4095"},
	} {
		got := SlotName(space, netip.MustParsePrefix(tc.pool), tc.ns, tc.slot)
		if got != tc.want {
			t.Errorf("SlotName(%s, %s, %d) = %q, want %q", tc.pool, tc.ns, tc.slot, got, tc.want)
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("SlotName(%s, %s, %d) = %q is not a DNS subdomain: %v", tc.pool, tc.ns, tc.slot, got, errs)
		}
		if strings.Count(got, ".") != 3 {
			t.Errorf("SlotName %q must have exactly three dots", got)
		}
		if former := FormerSlotName(netip.MustParsePrefix(tc.pool), tc.ns, tc.slot); strings.Count(former, ".") != 2 {
			t.Errorf("FormerSlotName %q must have exactly two dots", former)
		}
	}
	if FormerSlotName(netip.MustParsePrefix("10.1.0.0/24"), "tenant-a", 3) != "10-1-0-0-24.tenant-a.3" {
		t.Errorf("FormerSlotName changed: %q", FormerSlotName(netip.MustParsePrefix("10.1.0.0/24"), "tenant-a", 3))
	}
}

// TestWalkVisitsEveryIndexOnce checks the hashed walk over sizes that are
// prime, even, powers of two and tiny: every index of the range exactly
// once, wrapping past the end back to the start of the range.
func TestWalkVisitsEveryIndexOnce(t *testing.T) {
	for _, r := range []hostRange{{0, 1}, {0, 2}, {1, 2}, {1, 3}, {1, 254}, {1, 256}, {1, 4094}, {0, 997}, {1, 1000}} {
		for k := range 20 {
			key := fmt.Sprintf("pod-%d/data/net1", k)
			w := newWalk(r, key)
			seen := make(map[uint64]bool, r.count)
			var order []uint64
			for i, ok := w.next(); ok; i, ok = w.next() {
				if i < r.first || i >= r.first+r.count {
					t.Fatalf("range %+v key %s: index %d outside the range", r, key, i)
				}
				if seen[i] {
					t.Fatalf("range %+v key %s: index %d visited twice", r, key, i)
				}
				seen[i] = true
				order = append(order, i)
			}
			if uint64(len(seen)) != r.count {
				t.Fatalf("range %+v key %s: visited %d of %d", r, key, len(seen), r.count)
			}
			// Same key, same sequence: a retry walks to the same address.
			again := newWalk(r, key)
			for _, want := range order {
				if got, _ := again.next(); got != want {
					t.Fatalf("range %+v key %s: second walk gave %d, first %d", r, key, got, want)
				}
			}
		}
	}
}

// TestWalkWrapsAround pins the modular arithmetic at the top of the range.
func TestWalkWrapsAround(t *testing.T) {
	w := &walk{r: hostRange{first: 1, count: 10}, cur: 8, stride: 3}
	var got []uint64
	for i, ok := w.next(); ok; i, ok = w.next() {
		got = append(got, i)
	}
	want := []uint64{9, 2, 5, 8, 1, 4, 7, 10, 3, 6} // (8 + 3k) mod 10, plus first
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("walk = %v, want %v", got, want)
	}
	// The largest space: indices near 2^63 must not overflow.
	big := &walk{r: hostRange{first: 1, count: maxHostIndex - 1}, cur: maxHostIndex - 2, stride: maxHostIndex - 3}
	a, _ := big.next()
	b, _ := big.next()
	if a != maxHostIndex-1 || b != maxHostIndex-3 {
		t.Fatalf("big walk = %d, %d; want %d, %d", a, b, maxHostIndex-1, maxHostIndex-3)
	}
}

// TestWalkSpreadsStarts checks that different pods start in different
// places, which is what keeps concurrent allocators apart.
func TestWalkSpreadsStarts(t *testing.T) {
	r := hostRange{first: 1, count: 4094}
	starts := map[uint64]bool{}
	for k := range 200 {
		i, _ := newWalk(r, fmt.Sprintf("uid-%d/data/net1", k)).next()
		starts[i] = true
	}
	// 200 uniform draws from 4094 collide a few times at most; far fewer
	// distinct starts would mean the hash is not spreading.
	if len(starts) < 180 {
		t.Fatalf("200 keys gave only %d distinct starts", len(starts))
	}
}

func TestCoprimeStride(t *testing.T) {
	for _, n := range []uint64{1, 2, 3, 4, 6, 12, 30, 4094, 1 << 20, maxHostIndex - 1} {
		for h := range uint64(50) {
			s := coprimeStride(h*0x9e3779b97f4a7c15, n)
			if s == 0 || (n > 1 && s >= n) || gcd(s, n) != 1 {
				t.Fatalf("coprimeStride(%d) = %d", n, s)
			}
		}
	}
}
