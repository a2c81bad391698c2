package underlay

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestPlan(t *testing.T) {
	a := VXLAN(4789, 1001, IPv4, addrs("10.0.0.3", "10.0.0.2", "10.0.0.2"))
	b := VXLAN(4789, 1002, IPv4, addrs("10.0.0.4"))
	c := VXLAN(4789, 1003, IPv6, addrs("fd00::2"))
	got, err := Plan([]Tunnel{b, c, a})
	if err != nil {
		t.Fatal(err)
	}
	want := Ruleset{
		Sets: []Set{
			{Name: "from-vxlan-4789-1001-v4", Family: IPv4, Addrs: addrs("10.0.0.2", "10.0.0.3")},
			{Name: "from-vxlan-4789-1002-v4", Family: IPv4, Addrs: addrs("10.0.0.4")},
			{Name: "from-vxlan-4789-1003-v6", Family: IPv6, Addrs: addrs("fd00::2")},
			{Name: "peers-17-4789-v4", Family: IPv4, Addrs: addrs("10.0.0.2", "10.0.0.3", "10.0.0.4")},
			{Name: "peers-17-4789-v6", Family: IPv6, Addrs: addrs("fd00::2")},
		},
		Rules: []Rule{
			{Hook: Input, Family: IPv4, Proto: UDP, Port: 4789, Segment: VXLANSegment(1001), Check: NotFromSet, Set: "from-vxlan-4789-1001-v4"},
			{Hook: Input, Family: IPv4, Proto: UDP, Port: 4789, Segment: VXLANSegment(1001), Check: NotOnReversePath},
			{Hook: Input, Family: IPv4, Proto: UDP, Port: 4789, Segment: VXLANSegment(1002), Check: NotFromSet, Set: "from-vxlan-4789-1002-v4"},
			{Hook: Input, Family: IPv4, Proto: UDP, Port: 4789, Segment: VXLANSegment(1002), Check: NotOnReversePath},
			{Hook: Input, Family: IPv6, Proto: UDP, Port: 4789, Segment: VXLANSegment(1003), Check: NotFromSet, Set: "from-vxlan-4789-1003-v6"},
			{Hook: Input, Family: IPv6, Proto: UDP, Port: 4789, Segment: VXLANSegment(1003), Check: NotOnReversePath},
			{Hook: Forward, Family: IPv4, Proto: UDP, Port: 4789, Check: ToSet, Set: "peers-17-4789-v4"},
			{Hook: Forward, Family: IPv6, Proto: UDP, Port: 4789, Check: ToSet, Set: "peers-17-4789-v6"},
			{Hook: Input, Family: IPv6, Proto: UDP, Port: 4789, Check: Fragmented},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Plan =\n%+v\nwant\n%+v", got, want)
	}
	again, _ := Plan([]Tunnel{a, c, b})
	if !reflect.DeepEqual(again, got) {
		t.Error("the order of the tunnels changes the ruleset")
	}
}

func TestPlanNoTunnelsIsNoTable(t *testing.T) {
	rs, err := Plan(nil)
	if err != nil || !rs.Empty() {
		t.Fatalf("Plan(nil) = %+v, %v; want an empty ruleset", rs, err)
	}
}

func TestPlanPeerlessTunnelDropsEverySource(t *testing.T) {
	rs, err := Plan([]Tunnel{VXLAN(4789, 7, IPv4, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Sets) == 0 || len(rs.Sets[0].Addrs) != 0 || rs.Rules[0].Check != NotFromSet {
		t.Fatalf("a tunnel without peers must still get its drop rule and an empty set: %+v", rs)
	}
}

func TestPlanRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    []Tunnel
		want string
	}{
		{"bad name", []Tunnel{{Name: "a b", Proto: UDP, Port: 1, Family: IPv4}}, `tunnel "a b": name`},
		{"twice", []Tunnel{VXLAN(4789, 1, IPv4, nil), VXLAN(4789, 1, IPv4, nil)}, "listed twice"},
		{"port 0", []Tunnel{{Name: "x", Proto: UDP, Family: IPv4}}, "port 0"},
		{"family", []Tunnel{{Name: "x", Proto: UDP, Port: 1, Family: 5}}, "family 5"},
		{"segment too large", []Tunnel{{Name: "x", Proto: UDP, Port: 1, Family: IPv4, Segment: &Segment{Offset: 12, Len: 3, Value: 1 << 24}}}, "does not fit 3 bytes"},
		{"segment length", []Tunnel{{Name: "x", Proto: UDP, Port: 1, Family: IPv4, Segment: &Segment{Offset: 12, Len: 5}}}, "does not fit 5 bytes"},
		{"peer of the other family", []Tunnel{VXLAN(4789, 1, IPv4, addrs("fd00::1"))}, "peer fd00::1 is not an IPv4 address"},
		{"invalid peer", []Tunnel{VXLAN(4789, 1, IPv6, []netip.Addr{{}})}, "is not an IPv6 address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Plan(tc.t)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Plan error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
