package rules

import (
	"net/netip"
	"testing"
)

func TestReservedInPool(t *testing.T) {
	for _, tc := range []struct {
		pool, addr, want string
	}{
		{"10.0.0.0/24", "10.0.0.0", "network address"},
		{"10.0.0.0/24", "10.0.0.255", "broadcast address"},
		{"10.0.0.0/24", "10.0.0.1", ""},
		{"10.0.0.0/31", "10.0.0.0", ""},
		{"10.0.0.0/31", "10.0.0.1", ""},
		{"10.0.0.9/32", "10.0.0.9", ""},
		{"fd00::/64", "fd00::", "network address"},
		{"fd00::/64", "fd00::ffff:ffff:ffff:ffff", ""}, // no broadcast in IPv6
		{"fd00::/127", "fd00::", ""},
		{"fd00::/128", "fd00::", ""},
	} {
		if got := ReservedInPool(netip.MustParsePrefix(tc.pool), netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("ReservedInPool(%s, %s) = %q, want %q", tc.pool, tc.addr, got, tc.want)
		}
	}
}
