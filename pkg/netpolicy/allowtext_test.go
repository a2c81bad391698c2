package netpolicy

import (
	"net/netip"
	"testing"
)

// TestAllowText: what FormatAllow writes, ParseAllow reads back the same,
// and bad text is refused naming the part.
func TestAllowText(t *testing.T) {
	for _, a := range []Allow{
		{Peer: netip.MustParsePrefix("10.1.0.7/32"), Protocol: 6, PortLo: 80, PortHi: 80},
		{Peer: netip.MustParsePrefix("fd00::/64"), AnyProtocol: true, PortHi: 65535},
		{Peer: netip.MustParsePrefix("0.0.0.0/0"), Protocol: 132, PortLo: 1000, PortHi: 2000},
		{Peer: netip.MustParsePrefix("10.0.0.0/8"), Protocol: 47, PortHi: 65535},
	} {
		text := FormatAllow(a)
		back, err := ParseAllow(text)
		if err != nil || back != a {
			t.Errorf("%+v: wrote %q, read back %+v, %v", a, text, back, err)
		}
	}
	if got := FormatAllow(Allow{Peer: netip.MustParsePrefix("10.1.0.7/32"), Protocol: 17, PortLo: 53, PortHi: 54}); got != "10.1.0.7/32 udp 53-54" {
		t.Errorf("FormatAllow = %q", got)
	}
	for _, bad := range []string{"", "10.0.0.1/32 tcp", "10.0.0.1 tcp 80", "10.0.0.0/8 icmp 0", "10.0.0.0/8 tcp 90-80", "10.0.0.0/8 tcp 70000", "10.0.0.0/8 tcp 80 x"} {
		if _, err := ParseAllow(bad); err == nil {
			t.Errorf("ParseAllow(%q) took it", bad)
		}
	}
}
