package policy

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// spanning offers one VXLAN network, one IPv6-underlay VXLAN network and
// one uplink network to the telco namespaces.
func spanning(name string, vni int32, bridge string) v1alpha1.NetworkProfile {
	return v1alpha1.NetworkProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec: v1alpha1.NetworkProfileSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "telco"}},
			Networks: []v1alpha1.Network{{
				Name:   name + "-overlay",
				Bridge: &v1alpha1.BridgeNetwork{Name: bridge, VXLAN: &v1alpha1.VXLANSpan{VNI: vni}},
				MTU:    &v1alpha1.MTURange{Max: i32(9000)},
			}, {
				Name: name + "-overlay6",
				Bridge: &v1alpha1.BridgeNetwork{Name: bridge + "6", VXLAN: &v1alpha1.VXLANSpan{
					VNI: vni + 1, Port: 4790, UnderlayMTU: 9000, Local: &v1alpha1.VXLANLocal{Address: "fd00:1::5"},
					Underlay: &v1alpha1.VXLANUnderlay{CIDRs: []string{"fd00:1::/64"}},
				}},
			}, {
				Name:   name + "-uplink",
				Bridge: &v1alpha1.BridgeNetwork{Name: bridge + "u", Uplink: &v1alpha1.UplinkSpan{Interface: "up-" + name}},
			}},
		},
	}
}

func decideSpan(t *testing.T, annotation string, profiles ...v1alpha1.NetworkProfile) *v1alpha1.Approval {
	t.Helper()
	a, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith(annotation, ""), Profiles: profiles})
	if len(errs) > 0 {
		t.Fatalf("denied:\n%s", joinErrs(errs))
	}
	return a
}

func TestSpanningNetworksAreApprovedWithWhatTheAgentNeeds(t *testing.T) {
	p := spanning("span", 1001, "pnbr-span")
	a := decideSpan(t, "span-overlay, span-overlay6, span-uplink", p)
	vx := a.Interfaces[0]
	if vx.Kind != v1alpha1.KindBridge || vx.Bridge != "pnbr-span" || vx.VXLAN == nil || vx.Uplink != "" {
		t.Fatalf("overlay interface: %+v", vx)
	}
	if !reflect.DeepEqual(*vx.VXLAN, v1alpha1.ApprovedVXLAN{VNI: 1001, Port: DefaultVXLANPort}) {
		t.Errorf("overlay: got %+v, want vni 1001 on the default port", *vx.VXLAN)
	}
	if vx.MTU != DefaultUnderlayMTU-VXLANOverheadIPv4 {
		t.Errorf("overlay mtu: got %d, want %d (1500 minus 50 over IPv4)", vx.MTU, DefaultUnderlayMTU-VXLANOverheadIPv4)
	}
	vx6 := a.Interfaces[1]
	if vx6.VXLAN == nil || !reflect.DeepEqual(*vx6.VXLAN, v1alpha1.ApprovedVXLAN{VNI: 1002, Port: 4790, LocalAddress: "fd00:1::5", UnderlayCIDRs: []string{"fd00:1::/64"}}) {
		t.Errorf("IPv6 overlay: got %+v", vx6.VXLAN)
	}
	if vx6.MTU != 9000-VXLANOverheadIPv6 {
		t.Errorf("IPv6 overlay mtu: got %d, want %d (9000 minus 70 over IPv6)", vx6.MTU, 9000-VXLANOverheadIPv6)
	}
	up := a.Interfaces[2]
	if up.Uplink != "up-span" || up.VXLAN != nil || up.MTU != 0 {
		t.Errorf("uplink interface: %+v", up)
	}
}

func TestOverlayMTUAboveTheLimitIsDenied(t *testing.T) {
	p := spanning("span", 1001, "pnbr-span")
	decideSpan(t, `[{"name":"span-overlay","mtu":1450}]`, p)
	_, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith(`[{"name":"span-overlay","mtu":1451}]`, ""), Profiles: []v1alpha1.NetworkProfile{p}})
	requireErr(t, errs, "[0].mtu", "1451", `network "span-overlay"`, "above 1450", "underlayMTU 1500 minus 50 bytes of VXLAN over IPv4")

	p.Spec.Networks[0].MTU.Default = i32(1500)
	_, errs = Decide(Input{Namespace: telcoNamespace(), Pod: podWith("span-overlay", ""), Profiles: []v1alpha1.NetworkProfile{p}})
	requireErr(t, errs, "[0].mtu", `profile "span"`, "default mtu 1500 above 1450", "an admin must fix")
}

func TestSpanningClashesAreConflicts(t *testing.T) {
	// One uplink for two bridges.
	a, b := spanning("a", 1001, "pnbr-a"), spanning("b", 2001, "pnbr-b")
	b.Spec.Networks[2].Bridge.Uplink.Interface = "up-a"
	conflicts := ProfileConflicts([]v1alpha1.NetworkProfile{a, b})
	requireErr(t, conflicts["a"], "spec.networks[2].bridge.uplink.interface", "uplink up-a", `bridge "pnbr-bu" of network "b-uplink" in profile "b"`)
	_, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith("b-uplink", ""), Profiles: []v1alpha1.NetworkProfile{a, b}})
	requireErr(t, errs, `network "b-uplink"`, "uplink up-a", `profile "a"`, `profile "b"`)

	// One bridge spanning in two ways.
	b = spanning("b", 2001, "pnbr-b")
	b.Spec.Networks[0].Bridge.Name = "pnbr-au"
	conflicts = ProfileConflicts([]v1alpha1.NetworkProfile{a, b})
	requireErr(t, conflicts["a"], "spec.networks[2].bridge", "spanning setting uplink up-a", `network "b-overlay" in profile "b" (vxlan vni 2001 port 4789`)
	requireErr(t, conflicts["b"], "spec.networks[0].bridge", "spanning setting vxlan vni 2001", `network "a-uplink" in profile "a" (uplink up-a)`)
	if len(ProfileConflicts([]v1alpha1.NetworkProfile{a, spanning("b", 2001, "pnbr-b")})) != 0 {
		t.Error("profiles without a clash reported")
	}
}

func TestVNIOnTwoBridgesIsAConflict(t *testing.T) {
	a, b := spanning("a", 1001, "pnbr-a"), spanning("b", 1001, "pnbr-b")
	conflicts := ProfileConflicts([]v1alpha1.NetworkProfile{b, a})
	requireErr(t, conflicts["a"], "spec.networks[0].bridge.vxlan.vni", "1001", `bridge "pnbr-a"`, `profile "a"`, `bridge "pnbr-b" of network "b-overlay" in profile "b"`)
	requireErr(t, conflicts["b"], "spec.networks[0].bridge.vxlan.vni", `bridge "pnbr-a" of network "a-overlay" in profile "a"`)

	_, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith("a-overlay", ""), Profiles: []v1alpha1.NetworkProfile{a, b}})
	requireErr(t, errs, "[0].name", `network "a-overlay"`, "vni 1001", `profile "a"`, `profile "b"`, "an admin must change one")
	// A network without a clash stays usable.
	decideSpan(t, "a-uplink", a, b)

	// The same VNI for the same bridge (one network offered twice) is no
	// clash.
	c := spanning("a", 1001, "pnbr-a")
	c.Name = "c"
	if conflicts := ProfileConflicts([]v1alpha1.NetworkProfile{a, c}); len(conflicts) != 0 {
		t.Errorf("same vni, same bridge: want no conflict, got %v", conflicts)
	}
}

func TestBrokenSpanIsTheAdminsError(t *testing.T) {
	cases := []struct {
		name string
		edit func(*v1alpha1.BridgeNetwork)
		want string
	}{
		{"both", func(b *v1alpha1.BridgeNetwork) { b.Uplink = &v1alpha1.UplinkSpan{Interface: "eth1"} }, "sets both bridge.vxlan and bridge.uplink"},
		{"vni", func(b *v1alpha1.BridgeNetwork) { b.VXLAN.VNI = 1 << 24 }, "bridge.vxlan.vni 16777216 outside 1-16777215"},
		{"local", func(b *v1alpha1.BridgeNetwork) { b.VXLAN.Local = &v1alpha1.VXLANLocal{} }, "sets neither of bridge.vxlan.local.interface and .address"},
		{"address", func(b *v1alpha1.BridgeNetwork) { b.VXLAN.Local = &v1alpha1.VXLANLocal{Address: "node1"} }, `bridge.vxlan.local.address "node1" that is not an IP address`},
		{"underlay", func(b *v1alpha1.BridgeNetwork) { b.VXLAN.UnderlayMTU = 1000 }, "bridge.vxlan.underlayMTU 1000 outside 1280-65535"},
		{"vlan", func(b *v1alpha1.BridgeNetwork) { b.VLAN = &v1alpha1.VLANPolicy{Default: i32(100)} }, "combines bridge.vlan with spanning nodes"},
		{"loopback local address", func(b *v1alpha1.BridgeNetwork) { b.VXLAN.Local = &v1alpha1.VXLANLocal{Address: "127.0.0.2"} }, `local.address "127.0.0.2" that cannot carry the overlay`},
		{"local address outside the underlay", func(b *v1alpha1.BridgeNetwork) {
			b.VXLAN.Local = &v1alpha1.VXLANLocal{Address: "10.1.0.5"}
			b.VXLAN.Underlay = &v1alpha1.VXLANUnderlay{CIDRs: []string{"10.0.0.0/16"}}
		}, "outside underlay.cidrs [10.0.0.0/16]"},
		{"underlay cidrs loopback", func(b *v1alpha1.BridgeNetwork) {
			b.VXLAN.Underlay = &v1alpha1.VXLANUnderlay{CIDRs: []string{"10.0.0.0/16", "127.0.0.0/8"}}
		}, `underlay.cidrs entry "127.0.0.0/8" of addresses that cannot carry an overlay`},
		{"underlay cidrs everything", func(b *v1alpha1.BridgeNetwork) {
			b.VXLAN.Underlay = &v1alpha1.VXLANUnderlay{CIDRs: []string{"0.0.0.0/0"}}
		}, `entry "0.0.0.0/0"`},
		{"underlay cidrs not a cidr", func(b *v1alpha1.BridgeNetwork) {
			b.VXLAN.Underlay = &v1alpha1.VXLANUnderlay{CIDRs: []string{"10.0.0.1"}}
		}, `entry "10.0.0.1" that is not a CIDR`},
		{"underlay cidrs empty", func(b *v1alpha1.BridgeNetwork) { b.VXLAN.Underlay = &v1alpha1.VXLANUnderlay{} }, "has 0 bridge.vxlan.underlay.cidrs, want 1-16"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := spanning("span", 7, "pnbr-span")
			c.edit(p.Spec.Networks[0].Bridge)
			requireErr(t, ValidateNetworkProfile(&p), "spec.networks[0]", c.want)
			_, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith("span-overlay", ""), Profiles: []v1alpha1.NetworkProfile{p}})
			requireErr(t, errs, `network "span-overlay"`, c.want, "an admin must fix")
		})
	}
}

// TestSpanUsesAllocatesNothingWhenNothingSpans: every admission looks for
// spanning clashes across all profiles, so with a thousand profiles of
// node-local bridges that look must cost no memory; with one spanning
// network it lists every bridge network in a list sized once.
func TestSpanUsesAllocatesNothingWhenNothingSpans(t *testing.T) {
	var profiles []*v1alpha1.NetworkProfile
	for p := range 1000 {
		np := &v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: "p" + string(rune('a'+p%26))}}
		for n := range 4 {
			np.Spec.Networks = append(np.Spec.Networks, v1alpha1.Network{Name: "n" + string(rune('a'+n)), Bridge: &v1alpha1.BridgeNetwork{Name: "br" + string(rune('a'+n))}})
		}
		np.Spec.Networks = append(np.Spec.Networks, v1alpha1.Network{Name: "macvlan"})
		profiles = append(profiles, np)
	}
	var uses []spanUse
	if allocs := testing.AllocsPerRun(5, func() { uses = spanUses(profiles) }); allocs != 0 || uses != nil {
		t.Fatalf("no spanning network: %v allocations, %d uses; want 0 and none", allocs, len(uses))
	}
	profiles[500].Spec.Networks[2].Bridge.Uplink = &v1alpha1.UplinkSpan{Interface: "eth1"}
	if uses = spanUses(profiles); len(uses) != 4000 || cap(uses) != 4000 {
		t.Fatalf("one spanning network: %d uses in a list of capacity %d; want 4000 in 4000", len(uses), cap(uses))
	}
	if u := uses[500*4+2]; u.uplink != "eth1" || u.index != 2 || u.vni != 0 {
		t.Fatalf("use of the uplink network: %+v", u)
	}
}

func TestCheckUnderlayAddress(t *testing.T) {
	cidrs := []string{"10.0.0.0/16", "fd00:1::/64"}
	for _, c := range []struct {
		ip    string
		cidrs []string
		want  string
	}{
		{"10.0.3.4", cidrs, ""},
		{"fd00:1::9", cidrs, ""},
		{"::ffff:10.0.3.4", cidrs, ""},
		{"10.1.0.1", cidrs, "outside underlay.cidrs [10.0.0.0/16 fd00:1::/64]"},
		{"192.0.2.1", nil, ""},
		{"127.0.0.2", nil, "never carry an overlay"},
		{"127.0.0.2", []string{"127.0.0.0/8"}, "never carry an overlay"},
		{"::1", nil, "never carry an overlay"},
		{"0.0.0.0", nil, "never carry an overlay"},
		{"224.0.0.1", nil, "never carry an overlay"},
		{"255.255.255.255", nil, "never carry an overlay"},
		{"169.254.0.7", nil, "never carry an overlay"},
		{"fe80::1", nil, "never carry an overlay"},
	} {
		err := CheckUnderlayAddress(netip.MustParseAddr(c.ip), c.cidrs)
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckUnderlayAddress(%s, %v) = %v, want %q", c.ip, c.cidrs, err, c.want)
		}
	}
	if err := CheckUnderlayAddress(netip.Addr{}, nil); err == nil {
		t.Error("the zero address is accepted")
	}
}
