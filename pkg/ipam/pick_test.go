package ipam

import (
	"fmt"
	"net/netip"
	"testing"
)

// exactWant is w for a /22 with its gateway, as the exact-pool bench has it.
func exactWant() want {
	pool := netip.MustParsePrefix("10.200.0.0/22")
	return want{space: "pnbr-data", pool: pool, poolText: pool.String(), gateways: []netip.Addr{netip.MustParseAddr("10.200.0.1")}}
}

// claimAllBut claims every usable address of w's pool except free.
func claimAllBut(w want, free ...netip.Addr) map[netip.Addr]bool {
	claimed := map[netip.Addr]bool{}
	r := usableHosts(w.pool)
	for i := r.first; i < r.first+r.count; i++ {
		claimed[addrAt(w.pool, i)] = true
	}
	for _, a := range free {
		delete(claimed, a)
	}
	return claimed
}

// TestFreeInPoolFindsTheOneFreeAddress: a pool whose every address but one
// is claimed yields that one address within one walk, from any interface's
// walk and any resume point; random tries would find it 3 % of the time.
func TestFreeInPoolFindsTheOneFreeAddress(t *testing.T) {
	w := exactWant()
	for _, free := range []string{"10.200.0.2", "10.200.2.77", "10.200.3.254"} {
		one := netip.MustParseAddr(free)
		claimed := claimAllBut(w, one)
		for k := range 20 {
			key := fmt.Sprintf("uid-%d/data/net1/%s", k, w.pool)
			for _, step := range []uint64{0, 1, 500, 1020, 1 << 40} {
				got := freeInPool(w, walkFrom(usableHosts(w.pool), key, step), claimed, maxProbes)
				if len(got) != 1 || got[0] != one {
					t.Fatalf("free %s, key %s, step %d: picked %v", free, key, step, got)
				}
			}
		}
	}
}

// TestFreeInPoolFullPool: a pool with every usable address claimed, or with
// only its gateway unclaimed, has nothing to pick: it is full.
func TestFreeInPoolFullPool(t *testing.T) {
	exact := exactWant()
	tiny := want{pool: netip.MustParsePrefix("10.0.0.0/30"), gateways: []netip.Addr{netip.MustParseAddr("10.0.0.1")}}
	single := want{pool: netip.MustParsePrefix("10.0.0.7/32")}
	for _, c := range []struct {
		name    string
		w       want
		claimed map[netip.Addr]bool
	}{
		{"a /22, every address", exact, claimAllBut(exact)},
		{"a /22, all but the gateway", exact, claimAllBut(exact, exact.gateways[0])},
		{"a /30, all but the gateway", tiny, claimAllBut(tiny, tiny.gateways[0])},
		{"a /32, its address", single, claimAllBut(single)},
	} {
		if got := freeInPool(c.w, walkFrom(usableHosts(c.w.pool), "uid/data/net1", 3), c.claimed, maxProbes); len(got) != 0 {
			t.Errorf("%s: picked %v from a full pool", c.name, got)
		}
	}
}

// TestFreeInPoolFollowsTheWalk: the picks are the first unclaimed
// addresses along the interface's walk from the resume point, never a
// gateway, at most n of them, and each at most once.
func TestFreeInPoolFollowsTheWalk(t *testing.T) {
	w := exactWant()
	key := "uid-7/data/net1/" + w.pool.String()
	claimed := map[netip.Addr]bool{}
	wk := walkFrom(usableHosts(w.pool), key, 9)
	var want []netip.Addr
	for len(want) < 5 {
		i, _ := wk.next()
		addr := addrAt(w.pool, i)
		switch {
		case len(claimed) < 7: // the first seven along the walk are held
			claimed[addr] = true
		case !w.isGateway(addr):
			want = append(want, addr)
		}
	}
	got := freeInPool(w, walkFrom(usableHosts(w.pool), key, 9), claimed, 5)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("picked %v, want %v", got, want)
	}
	all := freeInPool(w, walkFrom(usableHosts(w.pool), key, 9), claimed, 5000)
	seen := map[netip.Addr]bool{}
	for _, a := range all {
		if seen[a] || claimed[a] || w.isGateway(a) {
			t.Fatalf("picked %s twice, claimed or a gateway", a)
		}
		seen[a] = true
	}
	if len(all) != 1021-len(claimed) {
		t.Fatalf("picked %d of the %d free addresses", len(all), 1021-len(claimed))
	}
}

// TestFreeInPoolHugePool: on an IPv6 /64 the pick stops once it has n, so
// its cost follows the claims it skips, not the pool's size.
func TestFreeInPoolHugePool(t *testing.T) {
	pool := netip.MustParsePrefix("fd00:1::/64")
	w := want{pool: pool, poolText: pool.String()}
	key := "uid/data/net1/" + pool.String()
	wk := walkFrom(usableHosts(pool), key, 0)
	claimed := map[netip.Addr]bool{}
	for range 1000 {
		i, _ := wk.next()
		claimed[addrAt(pool, i)] = true
	}
	got := freeInPool(w, walkFrom(usableHosts(w.pool), key, 0), claimed, 3)
	if len(got) != 3 {
		t.Fatalf("picked %v", got)
	}
	for _, a := range got {
		if claimed[a] {
			t.Fatalf("picked claimed %s", a)
		}
	}
}

// TestWalkFromIsTheWalkAdvanced: positioning a walk at step s gives the
// same indices as stepping a fresh walk s times, then goes on past the end
// of the sequence so that every index comes once.
func TestWalkFromIsTheWalkAdvanced(t *testing.T) {
	for _, r := range []hostRange{{0, 1}, {1, 2}, {1, 254}, {0, 997}, {1, 1021}} {
		key := fmt.Sprintf("k-%d", r.count)
		var order []uint64
		for w := newWalk(r, key); ; {
			i, ok := w.next()
			if !ok {
				break
			}
			order = append(order, i)
		}
		for _, step := range []uint64{0, 1, r.count / 2, r.count - 1, r.count + 3} {
			w := walkFrom(r, key, step)
			for k := range r.count {
				got, ok := w.next()
				if want := order[(step+k)%r.count]; !ok || got != want {
					t.Fatalf("range %+v step %d: index %d of the walk is %d, want %d", r, step, k, got, want)
				}
			}
			if _, ok := w.next(); ok {
				t.Fatalf("range %+v step %d: walk goes on past every index", r, step)
			}
		}
	}
	// The largest range: step*stride overflows 64 bits.
	r := hostRange{first: 1, count: maxHostIndex - 1}
	w := walkFrom(r, "k", maxHostIndex-2)
	if i, ok := w.next(); !ok || i < r.first || i >= r.first+r.count {
		t.Fatalf("largest range: index %d, %v", i, ok)
	}
}

// TestPickFreeFullRange: a range whose every index is held yields nothing,
// after one visit of each.
func TestPickFreeFullRange(t *testing.T) {
	r := hostRange{first: 0, count: 100}
	visits := 0
	got := pickFree(walkFrom(r, "slots", 42), func(uint64) bool { visits++; return true }, maxProbes)
	if len(got) != 0 || visits != 100 {
		t.Fatalf("picked %v after %d visits, want none after 100", got, visits)
	}
}
