package policy

import (
	"strings"
	"testing"

	"podnet.io/podnet/api/v1alpha1"
)

func TestValidateNetworkProfile(t *testing.T) {
	for _, p := range []v1alpha1.NetworkProfile{telcoData(), telcoUplink()} {
		if errs := ValidateNetworkProfile(&p); len(errs) != 0 {
			t.Errorf("profile %q: %v", p.Name, errs)
		}
	}
	cases := []struct {
		name   string
		change func(p *v1alpha1.NetworkProfile)
		want   []string // substrings of the one aggregated message
	}{
		{"max interfaces", func(p *v1alpha1.NetworkProfile) { p.Spec.MaxInterfaces = 99 }, []string{"spec.maxInterfaces", "99", "outside 1-32"}},
		{"two kinds", func(p *v1alpha1.NetworkProfile) {
			p.Spec.Networks[1].Macvlan = &v1alpha1.MacvlanNetwork{Master: "eth1"}
		},
			[]string{"spec.networks[1]", "sets 2 of bridge, macvlan, ipvlan, vlan"}},
		{"bad bridge name", func(p *v1alpha1.NetworkProfile) { p.Spec.Networks[1].Bridge.Name = "br/0" }, []string{"spec.networks[1]", `bridge.name "br/0"`}},
		{"duplicate network", func(p *v1alpha1.NetworkProfile) { p.Spec.Networks[1].Name = "data" }, []string{"spec.networks[1].name", "Duplicate value", `"data"`}},
		{"bad pool", func(p *v1alpha1.NetworkProfile) { p.Spec.Networks[0].IPAM.Pools[0] = "10.0.0.0/33" }, []string{"spec.networks[0].ipam", "10.0.0.0/33", "not a CIDR"}},
		{"pool host bits", func(p *v1alpha1.NetworkProfile) { p.Spec.Networks[0].IPAM.Pools[0] = "192.168.100.1/24" }, []string{"spec.networks[0].ipam", "host bits"}},
		{"vlan range", func(p *v1alpha1.NetworkProfile) { p.Spec.Networks[0].Bridge.VLAN.Allowed = []string{"200-100"} }, []string{"spec.networks[0].bridge.vlan.allowed", `"200-100"`, "1-4094"}},
		{"mtu range", func(p *v1alpha1.NetworkProfile) { p.Spec.Networks[0].MTU.Default = i32(9500) }, []string{"spec.networks[0].mtu", "default mtu 9500 outside its range 1280-9000"}},
		{"route", func(p *v1alpha1.NetworkProfile) { p.Spec.Networks[0].Routes.Allowed[0] = "10.50.0.1/16" }, []string{"spec.networks[0].routes.allowed[0]", "10.50.0.1/16", "without host bits"}},
		{"primary mtu", func(p *v1alpha1.NetworkProfile) { p.Spec.PrimaryInterface.MTU.Max = i32(70000) }, []string{"spec.primaryInterface.mtu", "70000"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := telcoData()
			c.change(&p)
			errs := ValidateNetworkProfile(&p)
			if len(errs) == 0 {
				t.Fatal("no error")
			}
			msg := errs.ToAggregate().Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q lacks %q", msg, w)
				}
			}
		})
	}
}

func TestProfileConflicts(t *testing.T) {
	a, b := telcoData(), telcoUplink()
	if got := ProfileConflicts([]v1alpha1.NetworkProfile{a, b}); len(got) != 0 {
		t.Fatalf("consistent profiles: %v", got)
	}
	// The same network, identical in two profiles, shares its pools.
	same := telcoData()
	same.Name = "telco-data-copy"
	if got := ProfileConflicts([]v1alpha1.NetworkProfile{a, same}); len(got) != 0 {
		t.Fatalf("identical network in two profiles: %v", got)
	}

	// The same name on another bridge.
	other := telcoData()
	other.Name = "other"
	other.Spec.Networks = other.Spec.Networks[1:]
	other.Spec.Networks[0].Bridge.Name = "pnbr-elsewhere"
	// Another network on "data"'s bridge whose pool overlaps "data"'s,
	// and one on another bridge with "data"'s very pool: a separate address
	// space, no clash.
	other.Spec.Networks = append(other.Spec.Networks, v1alpha1.Network{
		Name: "data2", Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-data"},
		IPAM: &v1alpha1.IPAM{Pools: []string{"192.168.100.128/25"}},
	}, v1alpha1.Network{
		Name: "data3", Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-data3"},
		IPAM: &v1alpha1.IPAM{Pools: []string{"192.168.100.0/24"}},
	})
	for _, order := range [][]v1alpha1.NetworkProfile{{a, b, other}, {other, b, a}} {
		got := ProfileConflicts(order)
		if len(got) != 2 || len(got["telco-uplink"]) != 0 {
			t.Fatalf("conflicts by profile: %v", got)
		}
		mine, theirs := got["other"].ToAggregate().Error(), got["telco-data"].ToAggregate().Error()
		for _, w := range []string{`spec.networks[0]`, `network "l2" is offered differently by profile "telco-data"`,
			"spec.networks[1].ipam.pools[0]", `overlaps pool 192.168.100.0/24 of network "data" in profile "telco-data"`} {
			if !strings.Contains(mine, w) {
				t.Errorf("profile other: %q lacks %q", mine, w)
			}
		}
		if strings.Contains(mine+theirs, "data3") || strings.Contains(mine, "spec.networks[2]") {
			t.Errorf("a pool on another bridge is reported as a clash: %q; %q", mine, theirs)
		}
		for _, w := range []string{`spec.networks[1]`, `network "l2" is offered differently by profile "other"`,
			"spec.networks[0].ipam.pools[0]", `overlaps pool 192.168.100.128/25 of network "data2" in profile "other"`} {
			if !strings.Contains(theirs, w) {
				t.Errorf("profile telco-data: %q lacks %q", theirs, w)
			}
		}
	}
}
