package underlay

import (
	"net/netip"
	"testing"
)

// TestPointToPointLock: two pods' tunnels of one port and VNI lock it to
// both remotes, in one set; the plan drops the VNI's packets from anyone
// else and forwards none to the remotes' port.
func TestPointToPointLock(t *testing.T) {
	a := PointToPoint(4789, 5001, IPv4, []netip.Addr{netip.MustParseAddr("198.51.100.7")})
	b := PointToPoint(4789, 5001, IPv4, []netip.Addr{netip.MustParseAddr("198.51.100.8")})
	c := PointToPoint(4790, 5001, IPv4, []netip.Addr{netip.MustParseAddr("198.51.100.9")})
	merged := MergeTunnels([]Tunnel{c, a, b})
	if len(merged) != 2 || merged[0].Name != "tun-4789-5001" || len(merged[0].Peers) != 2 || len(a.Peers) != 1 {
		t.Fatalf("merged %+v (a %+v)", merged, a)
	}
	rs, err := Plan(merged)
	if err != nil {
		t.Fatal(err)
	}
	var from *Set
	for i := range rs.Sets {
		if rs.Sets[i].Name == "from-tun-4789-5001-v4" {
			from = &rs.Sets[i]
		}
	}
	if from == nil || len(from.Addrs) != 2 {
		t.Fatalf("no set of the two remotes: %+v", rs.Sets)
	}
	var input, forward int
	for _, r := range rs.Rules {
		switch {
		case r.Hook == Input && r.Port == 4789 && r.Segment != nil && r.Segment.Value == 5001:
			input++
		case r.Hook == Forward && r.Port == 4789 && r.Check == ToSet:
			forward++
		}
	}
	if input != 2 || forward != 1 {
		t.Fatalf("rules %+v", rs.Rules)
	}
	if _, err := Plan([]Tunnel{a, b}); err == nil {
		t.Fatal("unmerged tunnels of one name planned")
	}
}
