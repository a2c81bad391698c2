package ipam

import (
	"net/netip"
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	cases := []struct {
		n      int
		jitter float64
		r      float64
		want   time.Duration
	}{
		{1, 0.2, 0, time.Second},
		{2, 0.2, 0, 2 * time.Second},
		{5, 0.2, 0, 16 * time.Second},
		{9, 0.2, 0, 256 * time.Second},
		{10, 0.2, 0, 5 * time.Minute}, // capped
		{100, 0.2, 0, 5 * time.Minute},
		{1, 0.2, 0.5, 900 * time.Millisecond}, // 10% off
		{10, 0.2, 0.999, 5*time.Minute - time.Duration(float64(5*time.Minute)*0.2*0.999)},
	}
	for _, c := range cases {
		if got := backoffDelay(c.n, time.Second, 5*time.Minute, c.jitter, c.r); got != c.want {
			t.Errorf("backoffDelay(%d, jitter %g, r %g) = %s, want %s", c.n, c.jitter, c.r, got, c.want)
		}
	}
}

// TestPoolBackoff: a pool waits after a failure, longer after each next
// one, not at all once an allocation there succeeded or this allocator
// freed one of its addresses; other pools and networks are not affected.
func TestPoolBackoff(t *testing.T) {
	now := time.Unix(1000, 0)
	b := NewPoolBackoff(time.Second, time.Minute)
	b.now = func() time.Time { return now }
	b.random = func() float64 { return 0 }
	pool := netip.MustParsePrefix("10.0.0.0/24")
	other := netip.MustParsePrefix("10.1.0.0/24")

	if w := b.wait("data", pool); w != 0 {
		t.Fatalf("fresh pool waits %s", w)
	}
	if d := b.failed("data", pool); d != time.Second {
		t.Fatalf("first failure: %s", d)
	}
	if d := b.failed("data", pool); d != 2*time.Second {
		t.Fatalf("second failure: %s", d)
	}
	if w := b.wait("data", pool); w != 2*time.Second {
		t.Fatalf("wait after two failures: %s", w)
	}
	if b.wait("data", other) != 0 || b.wait("other", pool) != 0 {
		t.Fatal("another pool or network waits too")
	}
	now = now.Add(2 * time.Second)
	if w := b.wait("data", pool); w != 0 {
		t.Fatalf("after the delay the pool still waits %s", w)
	}
	b.failed("data", pool)
	b.freed("data", netip.MustParseAddr("10.1.0.5"))
	if b.wait("data", pool) == 0 {
		t.Fatal("an address freed in another pool ended the wait")
	}
	b.freed("data", netip.MustParseAddr("10.0.0.5"))
	if w := b.wait("data", pool); w != 0 {
		t.Fatalf("an address freed in the pool left a wait of %s", w)
	}
	b.failed("data", pool)
	b.succeeded("data", pool)
	if d := b.failed("data", pool); d != time.Second {
		t.Fatalf("after a success the delay starts over at %s, got %s", time.Second, d)
	}
	var none *PoolBackoff
	if none.wait("data", pool) != 0 || none.failed("data", pool) != 0 {
		t.Fatal("a nil backoff waits")
	}
}
