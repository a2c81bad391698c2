package policy

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
)

func TestDecideApproves(t *testing.T) {
	// The /24 pool, less its gateway, has 253 usable addresses: shared by
	// every namespace labelled for the profile, each may hold half.
	dataIPAM := &v1alpha1.ApprovedIPAM{Pools: []string{"192.168.100.0/24", "fd00:100::/64"}, Gateways: []string{"192.168.100.1", "fd00:100::1"},
		AddressSpace: "pnbr-data.bridge", MaxPerNamespace: 126}
	tests := []struct {
		name       string
		annotation string
		sa         string
		want       v1alpha1.Approval
	}{
		{
			name:       "defaults: vlan, mtu, pools; bare bridge gets nothing",
			annotation: "data, l2@lan0",
			want: v1alpha1.Approval{
				ServiceAccount: "default",
				Profiles:       []v1alpha1.ProfileRef{{Name: "telco-data", Generation: 3}},
				Interfaces: []v1alpha1.ApprovedInterface{
					{Interface: "net1", Network: "data", Profile: "telco-data", Kind: v1alpha1.KindBridge, Bridge: "pnbr-data", VLAN: 100, MTU: 1500, IPAM: dataIPAM},
					{Interface: "lan0", Network: "l2", Profile: "telco-data", Kind: v1alpha1.KindBridge, Bridge: "pnbr-l2"},
				},
			},
		},
		{
			name:       "everything asked for within the limits",
			annotation: `[{"name":"data","interface":"dp0","ips":["192.168.100.7/24","fd00:100::7/64"],"mac":"02:AA:bb:00:00:07","mtu":9000,"vlan":250,"routes":[{"dst":"10.50.0.0/16"},{"dst":"10.50.8.0/24","gateway":"192.168.100.254"},{"dst":"fd50:0:0:1::/64"}]},{"interface":"eth0","mtu":8900}]`,
			want: v1alpha1.Approval{
				ServiceAccount: "default",
				Profiles:       []v1alpha1.ProfileRef{{Name: "telco-data", Generation: 3}},
				PrimaryMTU:     8900,
				Interfaces: []v1alpha1.ApprovedInterface{{
					Interface: "dp0", Network: "data", Profile: "telco-data", Kind: v1alpha1.KindBridge, Bridge: "pnbr-data",
					VLAN: 250, MTU: 9000, MAC: "02:aa:bb:00:00:07",
					IPAM: &v1alpha1.ApprovedIPAM{Pools: dataIPAM.Pools, Gateways: dataIPAM.Gateways, Static: []string{"192.168.100.7/24", "fd00:100::7/64"}, AddressSpace: "pnbr-data.bridge", MaxPerNamespace: 126},
					Routes: []v1alpha1.ApprovedRoute{
						{Dst: "10.50.0.0/16", Gateway: "192.168.100.1"},
						{Dst: "10.50.8.0/24", Gateway: "192.168.100.254"},
						{Dst: "fd50:0:0:1::/64", Gateway: "fd00:100::1"},
					},
				}},
			},
		},
		{
			name:       "service account profile: macvlan and ipvlan modes, vlan kind, pool without gateway",
			annotation: `[{"name":"uplink"},{"name":"fabric"},{"name":"tagged","vlan":305}]`,
			sa:         "cnf",
			want: v1alpha1.Approval{
				ServiceAccount: "cnf",
				Profiles:       []v1alpha1.ProfileRef{{Name: "telco-uplink", Generation: 1}},
				Interfaces: []v1alpha1.ApprovedInterface{
					{Interface: "net1", Network: "uplink", Profile: "telco-uplink", Kind: v1alpha1.KindMacvlan, Master: "eth1", Mode: "bridge"},
					{Interface: "net2", Network: "fabric", Profile: "telco-uplink", Kind: v1alpha1.KindIPVlan, Master: "eth2", Mode: "l3"},
					{Interface: "net3", Network: "tagged", Profile: "telco-uplink", Kind: v1alpha1.KindVLAN, Master: "eth3", VLAN: 305, IPAM: &v1alpha1.ApprovedIPAM{Pools: []string{"10.30.0.0/24"}, AddressSpace: "eth3.link", MaxPerNamespace: 127}},
				},
			},
		},
		{
			name:       "own namespace reference and a primary-only request",
			annotation: `[{"name":"l2","namespace":"t1"},{"interface":"eth0","mtu":1280}]`,
			want: v1alpha1.Approval{
				ServiceAccount: "default",
				Profiles:       []v1alpha1.ProfileRef{{Name: "telco-data", Generation: 3}},
				PrimaryMTU:     1280,
				Interfaces:     []v1alpha1.ApprovedInterface{{Interface: "net1", Network: "l2", Profile: "telco-data", Kind: v1alpha1.KindBridge, Bridge: "pnbr-l2"}},
			},
		},
		{
			name:       "empty json list approves no interface",
			annotation: `[]`,
			want:       v1alpha1.Approval{ServiceAccount: "default", Profiles: []v1alpha1.ProfileRef{}, Interfaces: []v1alpha1.ApprovedInterface{}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith(tc.annotation, tc.sa)
			got, errs := Decide(Input{Namespace: telcoNamespace(), Pod: pod, Profiles: baseProfiles()})
			if len(errs) > 0 {
				t.Fatalf("denied:\n%s", joinErrs(errs))
			}
			want := tc.want
			want.Namespace = "t1"
			want.RequestHash = approval.HashRequest(tc.annotation)
			if !reflect.DeepEqual(*got, want) {
				g, _ := json.MarshalIndent(got, "", " ")
				w, _ := json.MarshalIndent(want, "", " ")
				t.Fatalf("got\n%s\nwant\n%s", g, w)
			}
		})
	}
}

func TestDecideDenies(t *testing.T) {
	conflicting := telcoData()
	conflicting.Name = "telco-l2-other"
	conflicting.Spec.Networks = []v1alpha1.Network{{Name: "l2", Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-other"}}}
	conflicting.Spec.PrimaryInterface = nil
	badSelector := otherTenant()
	badSelector.Name = "broken"
	badSelector.Spec.NamespaceSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tenant", Operator: "Bogus"}}}
	badPool := telcoData()
	badPool.Name = "bad-pool"
	badPool.Spec.Networks = []v1alpha1.Network{{Name: "badpool", Bridge: &v1alpha1.BridgeNetwork{Name: "x"}, IPAM: &v1alpha1.IPAM{Pools: []string{"10.0.0.0/33"}}}}
	badVLAN := telcoData()
	badVLAN.Name = "bad-vlan"
	badVLAN.Spec.Networks = []v1alpha1.Network{{Name: "badvlan", Bridge: &v1alpha1.BridgeNetwork{Name: "x", VLAN: &v1alpha1.VLANPolicy{Allowed: []string{"200-100"}}}}}
	badMTU := telcoData()
	badMTU.Name = "bad-mtu"
	badMTU.Spec.Networks = []v1alpha1.Network{{Name: "badmtu", Bridge: &v1alpha1.BridgeNetwork{Name: "x"}, MTU: &v1alpha1.MTURange{Default: i32(9500), Min: i32(1280), Max: i32(9000)}}}
	noLimits := telcoData()
	noLimits.Name = "no-limits"
	noLimits.Spec.Networks = []v1alpha1.Network{{Name: "bare", Bridge: &v1alpha1.BridgeNetwork{Name: "x"}, IPAM: &v1alpha1.IPAM{Pools: []string{"10.9.0.0/24"}}}}
	noLimits.Spec.PrimaryInterface = nil
	capped := noLimits
	capped.Name = "capped"
	capped.Spec.MaxInterfaces = 4
	capped.Spec.Networks = []v1alpha1.Network{{Name: "capped", Bridge: &v1alpha1.BridgeNetwork{Name: "x"},
		IPAM: &v1alpha1.IPAM{Pools: []string{"10.9.0.0/24", "fd00:9::/64"}, AllowStatic: true, MaxAddressesPerNamespace: i32(2)}}}

	tests := []struct {
		name       string
		annotation string
		sa         string
		ns         *corev1.Namespace
		profiles   []v1alpha1.NetworkProfile
		// want are the parts one error must contain.
		want []string
	}{
		{name: "namespace not opted in", annotation: "data", ns: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t1", Labels: map[string]string{"tenant": "telco"}}},
			want: []string{`namespace "t1" is not opted in`, v1alpha1.EnabledLabel + "=true"}},
		{name: "opted in with a wrong value", annotation: "data", ns: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t1", Labels: map[string]string{"tenant": "telco", v1alpha1.EnabledLabel: "yes"}}},
			want: []string{"not opted in"}},
		{name: "network of another tenant", annotation: "secret",
			want: []string{"[0].name", `"secret"`, "Not found", `no profile offers network "secret" to namespace "t1"`}},
		{name: "reference to another namespace", annotation: "other/data",
			want: []string{"[0].namespace", `"other"`, `network "data"`, "other namespaces are not allowed"}},
		{name: "conflicting definitions name both profiles", annotation: "l2", profiles: append(baseProfiles(), conflicting),
			want: []string{"[0].name", `"l2"`, `profiles "telco-data" and "telco-l2-other"`, "an admin must"}},
		{name: "maxInterfaces counted per profile", annotation: "data, l2, data",
			want: []string{"[2]", `network "data"`, "interface 3", `profile "telco-data"`, "maxInterfaces 2"}},
		{name: "mtu above max", annotation: `[{"name":"data","mtu":9001}]`,
			want: []string{"[0].mtu", "9001", `network "data"`, `above the maximum mtu 9000 of profile "telco-data"`, "1280-9000"}},
		{name: "mtu below min", annotation: `[{"name":"data","mtu":1000}]`,
			want: []string{"[0].mtu", "1000", `network "data"`, "below the minimum mtu 1280"}},
		{name: "mtu without a range", annotation: `[{"name":"l2","mtu":1400}]`,
			want: []string{"[0].mtu", `network "l2"`, `profile "telco-data" sets no mtu range`}},
		{name: "vlan outside ranges", annotation: `[{"name":"data","vlan":200}]`,
			want: []string{"[0].vlan", "200", `network "data"`, `vlan not allowed by profile "telco-data"`, "100-199, 250 (default 100)"}},
		{name: "vlan on a bridge without vlans", annotation: `[{"name":"l2","vlan":120}]`,
			want: []string{"[0].vlan", "120", `network "l2"`, "without VLANs"}},
		{name: "vlan on macvlan", annotation: `[{"name":"uplink","vlan":120}]`, sa: "cnf",
			want: []string{"[0].vlan", `network "uplink"`, "macvlan network without VLANs"}},
		{name: "vlan kind without default needs a vlan", annotation: "tagged", sa: "cnf",
			want: []string{"[0].vlan", `network "tagged"`, "no default vlan", "300-309"}},
		{name: "same vlan subinterface twice", annotation: `[{"name":"tagged","vlan":301},{"name":"tagged","vlan":301}]`, sa: "cnf",
			want: []string{"[1].vlan", "301", "interface net1 of this pod is already on this vlan of eth3"}},
		{name: "static mac not allowed", annotation: `[{"name":"l2","mac":"02:00:00:00:00:01"}]`,
			want: []string{"[0].mac", `network "l2"`, "does not allow static MAC", "allowStaticMAC"}},
		{name: "multicast mac", annotation: `[{"name":"data","mac":"01:00:5e:00:00:01"}]`,
			want: []string{"[0].mac", "01:00:5e:00:00:01", `network "data"`, "not a unicast MAC"}},
		{name: "zero mac", annotation: `[{"name":"data","mac":"00:00:00:00:00:00"}]`,
			want: []string{"[0].mac", "not a unicast MAC"}},
		{name: "a VRRP gateway's mac", annotation: `[{"name":"data","mac":"00:00:5E:00:01:07"}]`,
			want: []string{"[0].mac", "00:00:5E:00:01:07", `network "data"`, "virtual router MAC of IPv4 VRRP", "must not be a gateway's"}},
		{name: "an HSRPv2 gateway's mac", annotation: `[{"name":"data","mac":"00:00:0c:9f:f1:23"}]`,
			want: []string{"[0].mac", "HSRP version 2", "must not be a gateway's"}},
		{name: "ips on a network without ipam", annotation: `[{"name":"l2","ips":["10.0.0.2/24"]}]`,
			want: []string{"[0].ips", `network "l2"`, "no addresses (no ipam)"}},
		{name: "static ips not allowed", annotation: `[{"name":"bare","ips":["10.9.0.7/24"]}]`, profiles: []v1alpha1.NetworkProfile{noLimits},
			want: []string{"[0].ips", `network "bare"`, `profile "no-limits" does not allow static addresses`}},
		{name: "static ip outside pools", annotation: `[{"name":"data","ips":["192.168.101.7/24"]}]`,
			want: []string{"[0].ips[0]", "192.168.101.7/24", `network "data"`, "outside every pool", "192.168.100.0/24"}},
		{name: "static ip is the gateway", annotation: `[{"name":"data","ips":["192.168.100.1/24"]}]`,
			want: []string{"[0].ips[0]", "192.168.100.1 is the gateway"}},
		{name: "static ip is the network address", annotation: `[{"name":"data","ips":["192.168.100.0/24"]}]`,
			want: []string{"[0].ips[0]", "network address of pool 192.168.100.0/24"}},
		{name: "static ip is the broadcast address", annotation: `[{"name":"data","ips":["192.168.100.255/24"]}]`,
			want: []string{"[0].ips[0]", "broadcast address of pool 192.168.100.0/24"}},
		{name: "static ipv6 is the subnet-router address", annotation: `[{"name":"data","ips":["fd00:100::/64"]}]`,
			want: []string{"[0].ips[0]", "network address of pool fd00:100::/64"}},
		{name: "static ip with another prefix length", annotation: `[{"name":"data","ips":["192.168.100.7/32"]}]`,
			want: []string{"[0].ips[0]", "192.168.100.7/32", "prefix length must be /24"}},
		{name: "same static ip on two interfaces", annotation: `[{"name":"data","ips":["192.168.100.7/24"]},{"name":"data","ips":["192.168.100.7/24"]}]`,
			want: []string{"[1].ips[0]", "192.168.100.7/24", "already given to interface net1"}},
		{name: "more addresses than the per-namespace cap", annotation: "capped, capped, capped", profiles: []v1alpha1.NetworkProfile{capped},
			want: []string{"[2]", `network "capped"`, "3 IPv4 addresses of address space x.bridge (pool 10.9.0.0/24), above its quota per namespace", `ipam.maxAddressesPerNamespace 2, the strictest of the profiles on it, profile "capped" included`}},
		{name: "static addresses count against the cap", annotation: `[{"name":"capped","ips":["10.9.0.7/24"]},{"name":"capped","ips":["10.9.0.8/24"]},{"name":"capped","interface":"net9"}]`, profiles: []v1alpha1.NetworkProfile{capped},
			want: []string{"[2]", "3 IPv4 addresses of address space x.bridge (pool 10.9.0.0/24)", "ipam.maxAddressesPerNamespace 2"}},
		{name: "cap out of range is the admin's error", annotation: "broken", profiles: brokenProfile(func(n *v1alpha1.Network) {
			n.IPAM = &v1alpha1.IPAM{Pools: []string{"10.1.0.0/24"}, MaxAddressesPerNamespace: i32(5000)}
		}), want: []string{"ipam.maxAddressesPerNamespace 5000 outside 1-4096", "an admin must fix"}},
		{name: "route outside allowed", annotation: `[{"name":"data","routes":[{"dst":"10.0.0.0/8"}]}]`,
			want: []string{"[0].routes[0].dst", "10.0.0.0/8", `network "data"`, `outside the routes allowed by profile "telco-data"`, "10.50.0.0/16"}},
		{name: "default route not allowed", annotation: `[{"name":"data","routes":[{"dst":"0.0.0.0/0"}]}]`,
			want: []string{"[0].routes[0].dst", "0.0.0.0/0", "outside the routes allowed"}},
		{name: "route family mismatch with allowed", annotation: `[{"name":"data","routes":[{"dst":"fd51::/64"}]}]`,
			want: []string{"[0].routes[0].dst", "fd51::/64", "outside the routes allowed"}},
		{name: "routes on a network without route policy", annotation: `[{"name":"l2","routes":[{"dst":"10.50.0.0/16"}]}]`,
			want: []string{"[0].routes", `network "l2"`, "allows no routes"}},
		{name: "route gateway off the network", annotation: `[{"name":"data","routes":[{"dst":"10.50.0.0/16","gateway":"10.1.1.1"}]}]`,
			want: []string{"[0].routes[0].gateway", "10.1.1.1", `gateway outside the pools of profile "telco-data"`}},
		{name: "primary mtu above limit", annotation: `[{"interface":"eth0","mtu":9000}]`,
			want: []string{"[0].mtu", "9000", "primary interface eth0", `1280-8900 (profile "telco-data")`}},
		{name: "primary tuning not offered", annotation: `[{"interface":"eth0","mtu":1400}]`, profiles: []v1alpha1.NetworkProfile{noLimits},
			want: []string{"[0].mtu", "no profile for namespace \"t1\" allows tuning it"}},
		{name: "broken selector is hinted", annotation: "secret", profiles: append(baseProfiles(), badSelector),
			want: []string{`profile "broken" has an invalid namespaceSelector`}},
		{name: "unparsable pool is the admin's error", annotation: "badpool", profiles: []v1alpha1.NetworkProfile{badPool},
			want: []string{"[0].ips", `network "badpool"`, `profile "bad-pool"`, "10.0.0.0/33", "an admin must fix the profile"}},
		{name: "unparsable vlan range is the admin's error", annotation: "badvlan", profiles: []v1alpha1.NetworkProfile{badVLAN},
			want: []string{"[0].vlan", `network "badvlan"`, `"200-100"`, "an admin must fix the profile"}},
		{name: "default mtu outside the range is the admin's error", annotation: "badmtu", profiles: []v1alpha1.NetworkProfile{badMTU},
			want: []string{"[0].mtu", `network "badmtu"`, `profile "bad-mtu"`, "default mtu 9500 outside its range 1280-9000", "an admin must fix the profile"}},
		{name: "two kinds is the admin's error", annotation: "broken", profiles: brokenProfile(func(n *v1alpha1.Network) { n.Macvlan = &v1alpha1.MacvlanNetwork{Master: "eth1"} }),
			want: []string{"[0].name", `network "broken"`, `profile "broken"`, "sets 2 of bridge, macvlan, ipvlan, vlan", "an admin must fix"}},
		{name: "bad bridge name is the admin's error", annotation: "broken", profiles: brokenProfile(func(n *v1alpha1.Network) { n.Bridge.Name = "br/0" }),
			want: []string{`bridge.name "br/0" that is not a link name`}},
		{name: "bad macvlan mode is the admin's error", annotation: "broken", profiles: brokenProfile(func(n *v1alpha1.Network) {
			n.Bridge, n.Macvlan = nil, &v1alpha1.MacvlanNetwork{Master: "eth1", Mode: "l2"}
		}), want: []string{`macvlan.mode "l2", not one of`}},
		{name: "bad ipvlan mode is the admin's error", annotation: "broken", profiles: brokenProfile(func(n *v1alpha1.Network) {
			n.Bridge, n.IPVlan = nil, &v1alpha1.IPVlanNetwork{Master: "eth1", Mode: "bridge"}
		}), want: []string{`ipvlan.mode "bridge", not one of`}},
		{name: "empty vlan policy is the admin's error", annotation: "broken", profiles: brokenProfile(func(n *v1alpha1.Network) { n.Bridge.VLAN = &v1alpha1.VLANPolicy{} }),
			want: []string{"[0].vlan", "neither a default nor allowed vlans"}},
		{name: "pool with host bits is the admin's error", annotation: "broken", profiles: brokenProfile(func(n *v1alpha1.Network) { n.IPAM = &v1alpha1.IPAM{Pools: []string{"10.1.0.1/24"}} }),
			want: []string{"[0].ips", `pool "10.1.0.1/24" with host bits set`}},
		{name: "two IPv4 pools are the admin's error", annotation: "broken", profiles: brokenProfile(func(n *v1alpha1.Network) { n.IPAM = &v1alpha1.IPAM{Pools: []string{"10.1.0.0/24", "10.2.0.0/24"}} }),
			want: []string{"two IPv4 pools (10.1.0.0/24 and 10.2.0.0/24)"}},
		{name: "two IPv6 gateways are the admin's error", annotation: "broken", profiles: brokenProfile(func(n *v1alpha1.Network) {
			n.IPAM = &v1alpha1.IPAM{Pools: []string{"fd00::/64"}, Gateways: []string{"fd00::1", "fd00::2"}}
		}), want: []string{"two IPv6 gateways (fd00::1 and fd00::2)"}},
		{name: "gateway outside pools is the admin's error", annotation: "broken", profiles: brokenProfile(func(n *v1alpha1.Network) {
			n.IPAM = &v1alpha1.IPAM{Pools: []string{"10.1.0.0/24"}, Gateways: []string{"10.2.0.1"}}
		}), want: []string{"gateway 10.2.0.1 outside its pools"}},
		{name: "bad routes.allowed is the admin's error even without routes asked", annotation: "broken", profiles: brokenProfile(func(n *v1alpha1.Network) { n.Routes = &v1alpha1.RoutePolicy{Allowed: []string{"10.50.0.1/16"}} }),
			want: []string{"[0].routes", `routes.allowed "10.50.0.1/16" that is not a network CIDR`}},
		{name: "maxInterfaces out of range is hinted", annotation: "broken", profiles: func() []v1alpha1.NetworkProfile {
			ps := brokenProfile(func(*v1alpha1.Network) {})
			ps[0].Spec.MaxInterfaces = 99
			return ps
		}(), want: []string{`profile "broken" has maxInterfaces 99 outside 1-32`}},
		{name: "parse errors are reported through Decide", annotation: "data@" + strings.Repeat("n", 16),
			want: []string{"[0].interface", "at most 15 characters"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns, profiles := tc.ns, tc.profiles
			if ns == nil {
				ns = telcoNamespace()
			}
			if profiles == nil {
				profiles = baseProfiles()
			}
			in := Input{Namespace: ns, Pod: podWith(tc.annotation, tc.sa), Profiles: profiles}
			got, errs := Decide(in)
			if got != nil || len(errs) == 0 {
				t.Fatalf("approved %+v", got)
			}
			requireErr(t, errs, tc.want...)
			last := errs[len(errs)-1].Error()
			if offer := Offer(in); !strings.Contains(last, offer) {
				t.Fatalf("last error does not list what the namespace may use:\n%s\nwant %q", last, offer)
			}
			for _, e := range errs {
				if !strings.Contains(e.Error(), "metadata.annotations[podnet.io/networks]") {
					t.Errorf("error without the annotation's path: %s", e.Error())
				}
			}
		})
	}
}

// brokenProfile is a profile for the telco namespaces offering one bridge
// network "broken", spoiled by mutate.
func brokenProfile(mutate func(n *v1alpha1.Network)) []v1alpha1.NetworkProfile {
	p := telcoData()
	p.Name = "broken"
	p.Spec.Networks = []v1alpha1.Network{{Name: "broken", Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-b"}}}
	mutate(&p.Spec.Networks[0])
	return []v1alpha1.NetworkProfile{p}
}

func TestDecideCombinesProfiles(t *testing.T) {
	// The same definition in two profiles is fine, and an interface beyond
	// the first profile's maxInterfaces is counted against the second.
	twin := telcoData()
	twin.Name = "telco-data-twin"
	twin.Generation = 7
	twin.Spec.MaxInterfaces = 1
	twin.Spec.PrimaryInterface = nil
	twin.Spec.Networks = twin.Spec.Networks[:1]
	in := Input{Namespace: telcoNamespace(), Pod: podWith("data, data, data", ""), Profiles: append(baseProfiles(), twin)}
	a, errs := Decide(in)
	if len(errs) > 0 {
		t.Fatalf("denied:\n%s", joinErrs(errs))
	}
	var profiles []string
	for _, i := range a.Interfaces {
		profiles = append(profiles, i.Profile)
	}
	if want := []string{"telco-data", "telco-data", "telco-data-twin"}; !reflect.DeepEqual(profiles, want) {
		t.Fatalf("interfaces granted through %v, want %v", profiles, want)
	}
	wantRefs := []v1alpha1.ProfileRef{{Name: "telco-data", Generation: 3}, {Name: "telco-data-twin", Generation: 7}}
	if !reflect.DeepEqual(a.Profiles, wantRefs) {
		t.Fatalf("profiles %+v, want %+v", a.Profiles, wantRefs)
	}
	// A fourth is beyond both.
	in.Pod = podWith("data, data, data, data", "")
	if _, errs := Decide(in); len(errs) == 0 {
		t.Fatal("a fourth interface was approved beyond maxInterfaces 2+1")
	} else {
		requireErr(t, errs, "[3]", `profiles "telco-data", "telco-data-twin"`, "maxInterfaces 2+1")
	}
	// A profile that spells out a default mode does not conflict with one
	// that leaves it to the default.
	spelled := telcoUplink()
	spelled.Name = "telco-uplink-spelled"
	spelled.Spec.Networks[0].Macvlan.Mode = "bridge"
	in = Input{Namespace: telcoNamespace(), Pod: podWith("uplink", "cnf"), Profiles: append(baseProfiles(), spelled)}
	if _, errs := Decide(in); len(errs) > 0 {
		t.Fatalf("defaulted twin reported as a conflict:\n%s", joinErrs(errs))
	}
}

func TestDecideIsDeterministic(t *testing.T) {
	annotation := `[{"name":"data","ips":["192.168.100.9/24"],"routes":[{"dst":"10.50.0.0/16"}]},{"name":"l2"},{"interface":"eth0","mtu":1400}]`
	profiles := append(baseProfiles(), telcoData())
	profiles[3].Name = "telco-data-copy"
	var first []byte
	for i := 0; i < 20; i++ {
		// Reverse and rotate the profile order: the approval must not change.
		order := make([]v1alpha1.NetworkProfile, len(profiles))
		for j := range profiles {
			order[j] = profiles[(j*3+i)%len(profiles)]
		}
		if i%2 == 1 {
			for l, r := 0, len(order)-1; l < r; l, r = l+1, r-1 {
				order[l], order[r] = order[r], order[l]
			}
		}
		a, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith(annotation, ""), Profiles: order})
		if len(errs) > 0 {
			t.Fatalf("denied:\n%s", joinErrs(errs))
		}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = b
		} else if !bytes.Equal(first, b) {
			t.Fatalf("approval changed with profile order:\n%s\n%s", first, b)
		}
	}
}

func TestDecideWithoutRequest(t *testing.T) {
	for _, pod := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "t1"}},
		podWith(" \t", ""),
	} {
		a, errs := Decide(Input{Namespace: telcoNamespace(), Pod: pod, Profiles: baseProfiles()})
		if a != nil || errs != nil {
			t.Fatalf("pod without a request: got %+v, %v", a, errs)
		}
	}
	if _, errs := Decide(Input{Pod: podWith("data", "")}); len(errs) == 0 {
		t.Fatal("missing namespace accepted")
	}
	other := podWith("data", "")
	other.Namespace = "t2"
	if _, errs := Decide(Input{Namespace: telcoNamespace(), Pod: other, Profiles: baseProfiles()}); len(errs) == 0 {
		t.Fatal("pod of namespace t2 judged with namespace t1's labels")
	}
}

func TestOffer(t *testing.T) {
	tests := []struct {
		name string
		ns   *corev1.Namespace
		sa   string
		want []string
		not  []string
	}{
		{name: "default service account", want: []string{
			`namespace "t1" may use: `,
			`data (profile "telco-data": bridge pnbr-data, vlans 100-199, 250 (default 100), mtu 1280-9000 (default 1500), static ips in 192.168.100.0/24 fd00:100::/64, routes within 10.50.0.0/16 fd50::/48, static mac)`,
			`l2 (profile "telco-data": bridge pnbr-l2, mtu fixed, no ips, no routes)`,
			`primary interface eth0 (profile "telco-data": mtu 1280-8900)`,
		}, not: []string{"secret"}},
		{name: "service account cnf", sa: "cnf", want: []string{
			`uplink (profile "telco-uplink": macvlan on eth1`,
			`fabric (profile "telco-uplink": ipvlan on eth2`,
			`tagged (profile "telco-uplink": vlan on eth3, vlans 300-309, mtu fixed, ips from 10.30.0.0/24 (no static)`,
		}},
		{name: "no profile", ns: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lonely", Labels: map[string]string{v1alpha1.EnabledLabel: "true"}}},
			want: []string{`namespace "lonely" may use no networks: no NetworkProfile selects it`}},
		{name: "not opted in", ns: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "off"}},
			want: []string{`namespace "off" is not opted in`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := tc.ns
			if ns == nil {
				ns = telcoNamespace()
			}
			got := Offer(Input{Namespace: ns, Pod: podWith("x", tc.sa), Profiles: baseProfiles()})
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("offer lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("offer mentions %q:\n%s", n, got)
				}
			}
		})
	}
}

// TestDecideCarriesQuota: a pod within the cap is approved, and the cap
// travels in the signed approval so that the agent enforces it without
// reading the profile.
func TestDecideCarriesQuota(t *testing.T) {
	p := telcoData()
	p.Spec.MaxInterfaces = 4
	p.Spec.Networks[0].IPAM.MaxAddressesPerNamespace = i32(2)
	got, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith("data, data", ""), Profiles: []v1alpha1.NetworkProfile{p}})
	if len(errs) > 0 {
		t.Fatalf("refused: %v", errs)
	}
	for _, iface := range got.Interfaces {
		if iface.IPAM == nil || iface.IPAM.MaxPerNamespace != 2 {
			t.Fatalf("interface %s: approved ipam %+v, want maxPerNamespace 2", iface.Interface, iface.IPAM)
		}
	}
}

// TestDecideCarriesRawSockets: whether a network lets its pods keep
// NET_RAW travels in the approval, for the webhook to act on.
func TestDecideCarriesRawSockets(t *testing.T) {
	p := telcoData()
	p.Spec.Networks[1].AllowRawSockets = true
	got, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith("data, l2", ""), Profiles: []v1alpha1.NetworkProfile{p}})
	if len(errs) > 0 {
		t.Fatalf("refused: %v", errs)
	}
	if got.Interfaces[0].RawSockets || !got.Interfaces[1].RawSockets {
		t.Fatalf("raw sockets per interface: data %v, l2 %v; want false, true", got.Interfaces[0].RawSockets, got.Interfaces[1].RawSockets)
	}
}

// TestDecideCarriesRouterGrants: a network's router pods and its taking of
// router advertisements travel in the approval per interface; neither is
// granted by default.
func TestDecideCarriesRouterGrants(t *testing.T) {
	p := telcoData()
	p.Spec.Networks[1].PortSecurity = &v1alpha1.PortSecurityPolicy{AllowRouters: true}
	p.Spec.Networks[1].AcceptRouterAdvertisements = true
	got, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith("data, l2", ""), Profiles: []v1alpha1.NetworkProfile{p}})
	if len(errs) > 0 {
		t.Fatalf("refused: %v", errs)
	}
	data, l2 := got.Interfaces[0], got.Interfaces[1]
	if data.Router || data.AcceptRA || !l2.Router || !l2.AcceptRA {
		t.Fatalf("router, acceptRA: data %v %v, l2 %v %v; want false false, true true", data.Router, data.AcceptRA, l2.Router, l2.AcceptRA)
	}
}

// TestDecideCarriesAddressChecks: a network's address checks travel in
// the approval per interface; none is asked by default.
func TestDecideCarriesAddressChecks(t *testing.T) {
	p := telcoData()
	p.Spec.Networks[1].AddressCheck = &v1alpha1.AddressCheck{Duplicates: true, Gateway: true}
	got, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith("data, l2", ""), Profiles: []v1alpha1.NetworkProfile{p}})
	if len(errs) > 0 {
		t.Fatalf("refused: %v", errs)
	}
	data, l2 := got.Interfaces[0], got.Interfaces[1]
	if data.CheckDuplicates || data.CheckGateway || !l2.CheckDuplicates || !l2.CheckGateway {
		t.Fatalf("checks: data %v %v, l2 %v %v; want false false, true true", data.CheckDuplicates, data.CheckGateway, l2.CheckDuplicates, l2.CheckGateway)
	}
}

// TestDecideSettings: per-interface settings are granted by name within the
// network's range and the kernel's, a setting's default always (rp_filter
// 0 below a range of 1–2 is what the interface has unasked); anything else
// is refused naming the field, the value and the limit.
func TestDecideSettings(t *testing.T) {
	p := telcoData()
	p.Spec.Networks[0].Settings = []v1alpha1.SettingRange{{Name: "disable_ipv6", Min: 0, Max: 1}}
	p.Spec.Networks[1].Settings = []v1alpha1.SettingRange{{Name: "arp_ignore", Min: 0, Max: 2}, {Name: "rp_filter", Min: 1, Max: 2}, {Name: "txqueuelen", Min: 100, Max: 5000}}
	decide := func(req string) (*v1alpha1.Approval, field.ErrorList) {
		return Decide(Input{Namespace: telcoNamespace(), Pod: podWith(req, ""), Profiles: []v1alpha1.NetworkProfile{p}})
	}
	got, errs := decide(`[{"name":"l2","settings":{"arp_ignore":1,"rp_filter":0,"arp_announce":0}}]`)
	if len(errs) > 0 {
		t.Fatalf("refused: %v", errs)
	}
	if want := map[string]int64{"arp_ignore": 1, "rp_filter": 0, "arp_announce": 0}; !reflect.DeepEqual(got.Interfaces[0].Settings, want) {
		t.Fatalf("settings = %v, want %v", got.Interfaces[0].Settings, want)
	}
	for name, tc := range map[string]struct {
		req  string
		want []string
	}{
		"above the range":    {`[{"name":"l2","settings":{"arp_ignore":3}}]`, []string{"settings[arp_ignore]", "3", "within 0–2", `profile "telco-data"`}},
		"below the range":    {`[{"name":"l2","settings":{"txqueuelen":50}}]`, []string{"settings[txqueuelen]", "within 100–5000"}},
		"not offered":        {`[{"name":"l2","settings":{"arp_announce":2}}]`, []string{"settings[arp_announce]", "does not let tenants choose arp_announce", "only its default 0"}},
		"a path, not a name": {`[{"name":"l2","settings":{"net.ipv4.conf.all.arp_ignore":1}}]`, []string{"settings[net.ipv4.conf.all.arp_ignore]", "arp_ignore", "txqueuelen"}},
		"another spelling":   {`[{"name":"l2","settings":{"arp-ignore":1}}]`, []string{"settings[arp-ignore]", "Unsupported value"}},
		// accept_ra's table default is the kernel's 1, but on a network
		// that does not take router advertisements podnet keeps it 0.
		"accept_ra through its default": {`[{"name":"l2","settings":{"accept_ra":1}}]`, []string{"settings[accept_ra]", "only its default 0"}},
		"outside the kernel's range":    {`[{"name":"l2","settings":{"txqueuelen":-1}}]`, []string{"settings[txqueuelen]", "outside the kernel's 0–1048576"}},
		"ipv6 off with ipv6 addresses":  {`[{"name":"data","settings":{"disable_ipv6":1}}]`, []string{"settings[disable_ipv6]", "take away the IPv6 addresses"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, errs := decide(tc.req)
			requireErr(t, errs, tc.want...)
		})
	}
}

// TestDecideSLAAC: SLAAC is granted only on a network that takes router
// advertisements; elsewhere none could arrive.
func TestDecideSLAAC(t *testing.T) {
	p := telcoData()
	p.Spec.Networks[1].AcceptRouterAdvertisements = true
	got, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith(`[{"name":"l2","slaac":true}]`, ""), Profiles: []v1alpha1.NetworkProfile{p}})
	if len(errs) > 0 || !got.Interfaces[0].SLAAC {
		t.Fatalf("slaac on a network that takes router advertisements: %+v, %v", got, errs)
	}
	_, errs = Decide(Input{Namespace: telcoNamespace(), Pod: podWith(`[{"name":"data","slaac":true}]`, ""), Profiles: []v1alpha1.NetworkProfile{p}})
	requireErr(t, errs, "slaac", "acceptRouterAdvertisements is not set")
}

// TestDecideOffloads: a tenant turns on or off only the features the
// network lists, by their exact name.
func TestDecideOffloads(t *testing.T) {
	p := telcoData()
	p.Spec.Networks[1].Offloads = []string{"tx-checksum-ip-generic", "rx-gro"}
	got, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith(`[{"name":"l2","offloads":{"tx-checksum-ip-generic":false,"rx-gro":true}}]`, ""), Profiles: []v1alpha1.NetworkProfile{p}})
	if len(errs) > 0 || !reflect.DeepEqual(got.Interfaces[0].Offloads, map[string]bool{"tx-checksum-ip-generic": false, "rx-gro": true}) {
		t.Fatalf("offloads the network lists: %+v, %v", got, errs)
	}
	for req, want := range map[string][]string{
		`[{"name":"l2","offloads":{"tx-tcp-segmentation":false}}]`: {"offloads[tx-tcp-segmentation]", "does not let tenants change offload tx-tcp-segmentation", "rx-gro"},
		`[{"name":"l2","offloads":{"gro":false}}]`:                 {"offloads[gro]", "does not let tenants change offload gro"},
		`[{"name":"data","offloads":{"rx-gro":false}}]`:            {"offloads[rx-gro]", "offloads lists none"},
	} {
		_, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith(req, ""), Profiles: []v1alpha1.NetworkProfile{p}})
		requireErr(t, errs, want...)
	}
}
