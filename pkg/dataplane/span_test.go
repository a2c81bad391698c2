package dataplane

import (
	"net"
	"strings"
	"testing"
)

func TestPlanRefusesABadSpan(t *testing.T) {
	vx := func(edit func(*VXLAN)) Interface {
		ifc := Interface{Name: "n", Kind: KindBridge, Bridge: "pnbr-s", VXLAN: &VXLAN{VNI: 7, Local: net.ParseIP("10.0.0.1"), Peers: []net.IP{net.ParseIP("10.0.0.2")}}}
		edit(ifc.VXLAN)
		return ifc
	}
	cases := []struct {
		name  string
		ifc   Interface
		state func(*State)
		want  string
	}{
		{"vxlan on macvlan", Interface{Name: "n", Kind: KindMacvlan, Master: "eth1", VXLAN: &VXLAN{VNI: 7}}, nil, `vxlan and uplink: not used by kind "macvlan"`},
		{"uplink on vlan", Interface{Name: "n", Kind: KindVLAN, Master: "eth1", VLAN: 5, Uplink: "eth2"}, nil, `vxlan and uplink: not used by kind "vlan"`},
		{"both", Interface{Name: "n", Kind: KindBridge, Bridge: "b", VXLAN: &VXLAN{VNI: 7}, Uplink: "eth2"}, nil, `vxlan and uplink "eth2": at most one`},
		{"uplink name", Interface{Name: "n", Kind: KindBridge, Bridge: "b", Uplink: "a/b"}, nil, "uplink:"},
		{"port vlan", Interface{Name: "n", Kind: KindBridge, Bridge: "b", VLAN: 100, Uplink: "eth2"}, nil, "vlan 100: a port VLAN cannot be combined with vxlan or uplink"},
		{"vni", vx(func(v *VXLAN) { v.VNI = 1 << 24 }), nil, "vxlan vni 16777216: must be between 1 and 16777215"},
		{"port", vx(func(v *VXLAN) { v.Port = 70000 }), nil, "vxlan port 70000"},
		{"dev", vx(func(v *VXLAN) { v.Dev = "a very long name" }), nil, "vxlan dev:"},
		{"peer twice", vx(func(v *VXLAN) { v.Peers = append(v.Peers, net.ParseIP("10.0.0.2")) }), nil, "peer 10.0.0.2: listed twice"},
		{"peer family", vx(func(v *VXLAN) { v.Peers = []net.IP{net.ParseIP("fd00::2")} }), nil, "peer fd00::2: not of the underlay's address family (IPv4"},
		{"ipv6 peer without local", vx(func(v *VXLAN) { v.Local, v.Peers = nil, []net.IP{net.ParseIP("fd00::2")} }), nil, "an IPv6 underlay needs an IPv6 local address"},
		{"multicast peer", vx(func(v *VXLAN) { v.Peers = []net.IP{net.ParseIP("239.1.1.1")} }), nil, "must be a unicast address"},
		{"foreign bridge", Interface{Name: "n", Kind: KindBridge, Bridge: "admin-br", Uplink: "eth2"}, nil, `bridge "admin-br" is not podnet's: a network spans nodes only through a bridge podnet creates`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := node()
			if c.state != nil {
				c.state(&s)
			}
			steps, err := Plan(pod(c.ifc), s)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error saying %q", err, c.want)
			}
			if len(steps) != 0 {
				t.Fatalf("steps for a refused interface: %v", steps)
			}
		})
	}
	// A good span plans like any bridge interface.
	good := vx(func(*VXLAN) {})
	if _, err := Plan(pod(good), node()); err != nil {
		t.Fatalf("good vxlan: %v", err)
	}
}
