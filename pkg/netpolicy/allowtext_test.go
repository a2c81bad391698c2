package netpolicy

import (
	"strings"
	"testing"
)

// TestTrafficText: what formatTraffic writes, parseTraffic reads back the
// same, and bad text is refused naming the part.
func TestTrafficText(t *testing.T) {
	for _, a := range []Allow{
		{Protocol: 6, PortLo: 80, PortHi: 80},
		{AnyProtocol: true, PortHi: 65535},
		{Protocol: 132, PortLo: 1000, PortHi: 2000},
		{Protocol: 47, PortHi: 65535},
	} {
		text := formatTraffic(a)
		f := strings.Fields(text)
		back, err := parseTraffic(f[0], f[1])
		if err != nil || back != a {
			t.Errorf("%+v: wrote %q, read back %+v, %v", a, text, back, err)
		}
	}
	if got := formatTraffic(Allow{Protocol: 17, PortLo: 53, PortHi: 54}); got != "udp 53-54" {
		t.Errorf("formatTraffic = %q", got)
	}
	for _, bad := range [][2]string{{"icmp", "0"}, {"tcp", "90-80"}, {"tcp", "70000"}, {"tcp", "x"}, {"256", "0"}} {
		if _, err := parseTraffic(bad[0], bad[1]); err == nil {
			t.Errorf("parseTraffic(%q, %q) took it", bad[0], bad[1])
		}
	}
}
