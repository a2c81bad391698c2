package policy

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// narrowFixture is a pod approved by the webhook for four networks, each
// value that an admin may narrow set: net1 on data (vlan 150, mtu 9000, two
// routes, the default route, raw sockets), net2 on uplink (macvlan), net3
// on span (vxlan, mtu chosen by the overlay), net4 on lan (arp_ignore 2,
// txqueuelen 4000, tx-checksum-ip-generic off).
func narrowFixture() GrantInput {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t1", Labels: map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "a"}}}
	profiles := []v1alpha1.NetworkProfile{{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: v1alpha1.NetworkProfileSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "a"}},
			MaxInterfaces:     4,
			Networks: []v1alpha1.Network{{
				Name:            "data",
				Bridge:          &v1alpha1.BridgeNetwork{Name: "pnbr-data", VLAN: &v1alpha1.VLANPolicy{Allowed: []string{"100-199"}}},
				MTU:             &v1alpha1.MTURange{Min: i32(1280), Max: i32(9000), Default: i32(1500)},
				IPAM:            &v1alpha1.IPAM{Pools: []string{"10.1.0.0/24"}, Gateways: []string{"10.1.0.1"}},
				Routes:          &v1alpha1.RoutePolicy{Allowed: []string{"10.50.0.0/16", "10.60.0.0/16"}},
				DefaultRoute:    &v1alpha1.DefaultRoutePolicy{Allowed: true},
				AllowRawSockets: true,
			}, {
				Name:    "uplink",
				Macvlan: &v1alpha1.MacvlanNetwork{Master: "eth1"},
			}, {
				Name:   "span",
				Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-span", VXLAN: &v1alpha1.VXLANSpan{VNI: 1001}},
			}, {
				Name:     "lan",
				Bridge:   &v1alpha1.BridgeNetwork{Name: "pnbr-lan"},
				Settings: []v1alpha1.SettingRange{{Name: "arp_ignore", Min: 0, Max: 2}, {Name: "txqueuelen", Min: 100, Max: 5000}},
				Offloads: []string{"tx-checksum-ip-generic"},
			}},
		},
	}}
	req := `[{"name":"data","vlan":150,"mtu":9000,"routes":[{"dst":"10.50.0.0/16"},{"dst":"10.60.0.0/16"}],"default-route":["10.1.0.1"]},{"name":"uplink"},{"name":"span"},{"name":"lan","settings":{"arp_ignore":2,"txqueuelen":4000},"offloads":{"tx-checksum-ip-generic":false}}]`
	return GrantInput{Namespace: ns, Profiles: profiles, Approval: decided(req, ns, profiles)}
}

// TestRevokedNarrowings narrows each value an admin may narrow under a
// running pod, and checks what the judgement keeps in place, what it
// detaches, and that the reason names the field, the approved value and
// the new limit.
func TestRevokedNarrowings(t *testing.T) {
	data := func(in *GrantInput) *v1alpha1.Network { return &in.Profiles[0].Spec.Networks[0] }
	type want struct {
		iface string
		// inPlace is what the narrowed interface must differ in from the
		// approved one; nil: detached.
		inPlace func(ai *v1alpha1.ApprovedInterface)
		reason  []string
	}
	tests := []struct {
		name   string
		change func(in *GrantInput)
		want   []want
	}{
		{name: "stands", change: func(*GrantInput) {}},
		{name: "widened", change: func(in *GrantInput) {
			data(in).MTU.Max = i32(9216)
			data(in).Bridge.VLAN.Allowed = []string{"1-4094"}
			data(in).Routes.Allowed = append(data(in).Routes.Allowed, "10.70.0.0/16")
			in.Profiles[0].Spec.MaxInterfaces = 8
		}},
		{name: "mtu max lowered", change: func(in *GrantInput) { data(in).MTU.Max = i32(1500) },
			want: []want{{iface: "net1", inPlace: func(ai *v1alpha1.ApprovedInterface) { ai.MTU = 1500 },
				reason: []string{"mtu 9000 lowered to 1500", "above the maximum mtu 1500", `profile "p"`}}}},
		{name: "mtu range removed", change: func(in *GrantInput) { data(in).MTU = nil },
			want: []want{{iface: "net1", reason: []string{"mtu 9000", `profile "p" sets no mtu range`}}}},
		{name: "mtu min raised", change: func(in *GrantInput) {
			data(in).MTU.Min, data(in).MTU.Max = i32(9100), i32(9200)
			data(in).MTU.Default = nil
		},
			want: []want{{iface: "net1", reason: []string{"mtu 9000", "below the minimum mtu 9100"}}}},
		{name: "overlay mtu lowered", change: func(in *GrantInput) { in.Profiles[0].Spec.Networks[2].Bridge.VXLAN.UnderlayMTU = 1400 },
			want: []want{{iface: "net3", inPlace: func(ai *v1alpha1.ApprovedInterface) { ai.MTU = 1350 },
				reason: []string{"mtu 1450 lowered to 1350", "sets no mtu range"}}}},
		{name: "one route no longer allowed", change: func(in *GrantInput) { data(in).Routes.Allowed = []string{"10.50.0.0/16"} },
			want: []want{{iface: "net1", inPlace: func(ai *v1alpha1.ApprovedInterface) { ai.Routes = ai.Routes[:1] },
				reason: []string{"route 10.60.0.0/16 removed", "outside the routes allowed", "(10.50.0.0/16)"}}}},
		{name: "routes no longer allowed", change: func(in *GrantInput) { data(in).Routes = nil },
			want: []want{{iface: "net1", inPlace: func(ai *v1alpha1.ApprovedInterface) { ai.Routes = nil },
				reason: []string{"routes 10.50.0.0/16, 10.60.0.0/16 removed", "allows no routes"}}}},
		{name: "default route no longer allowed", change: func(in *GrantInput) { data(in).DefaultRoute.Allowed = false },
			want: []want{{iface: "net1", inPlace: func(ai *v1alpha1.ApprovedInterface) { ai.DefaultRoute = nil },
				reason: []string{"default route via 10.1.0.1 removed", "defaultRoute.allowed"}}}},
		{name: "default gateway changed", change: func(in *GrantInput) { data(in).IPAM.Gateways = []string{"10.1.0.254"} },
			want: []want{{iface: "net1", inPlace: func(ai *v1alpha1.ApprovedInterface) { ai.DefaultRoute = nil },
				reason: []string{"default route via 10.1.0.1 removed", "gateways only", "10.1.0.254"}}}},
		{name: "mtu and routes together", change: func(in *GrantInput) { data(in).MTU.Max = i32(4000); data(in).Routes.Allowed = []string{"10.60.0.0/16"} },
			want: []want{{iface: "net1", inPlace: func(ai *v1alpha1.ApprovedInterface) { ai.MTU = 4000; ai.Routes = ai.Routes[1:] },
				reason: []string{"mtu 9000 lowered to 4000", "route 10.50.0.0/16 removed"}}}},
		{name: "setting range narrowed", change: func(in *GrantInput) { in.Profiles[0].Spec.Networks[3].Settings[0].Max = 1 },
			want: []want{{iface: "net4", inPlace: func(ai *v1alpha1.ApprovedInterface) {
				ai.Settings = map[string]int64{"arp_ignore": 1, "txqueuelen": 4000}
			}, reason: []string{"setting arp_ignore 2 changed to 1", "within 0–1", `profile "p"`}}}},
		{name: "settings no longer offered", change: func(in *GrantInput) { in.Profiles[0].Spec.Networks[3].Settings = nil },
			want: []want{{iface: "net4", inPlace: func(ai *v1alpha1.ApprovedInterface) {
				ai.Settings = map[string]int64{"arp_ignore": 0, "txqueuelen": 1000}
			}, reason: []string{"setting arp_ignore 2 changed to 0", "setting txqueuelen 4000 changed to 1000", "does not let tenants choose"}}}},
		// A feature's default is the device's, not known once changed.
		{name: "offload no longer offered", change: func(in *GrantInput) { in.Profiles[0].Spec.Networks[3].Offloads = nil },
			want: []want{{iface: "net4", reason: []string{"offload tx-checksum-ip-generic", `profile "p"`}}}},
		{name: "vlan out of range", change: func(in *GrantInput) { data(in).Bridge.VLAN.Allowed = []string{"100-119"} },
			want: []want{{iface: "net1", reason: []string{"vlan 150", "vlan not allowed", "100-119"}}}},
		{name: "vlan out of range wins over mtu", change: func(in *GrantInput) { data(in).Bridge.VLAN.Allowed = []string{"100-119"}; data(in).MTU.Max = i32(1500) },
			want: []want{{iface: "net1", reason: []string{"vlan 150", "100-119"}}}},
		{name: "vlan given to a bridge without", change: func(in *GrantInput) {
			in.Profiles[0].Spec.Networks[3].Bridge.VLAN = &v1alpha1.VLANPolicy{Default: i32(7)}
		}, want: []want{{iface: "net4", reason: []string{"vlan none is now 7"}}}},
		{name: "bridge reassigned", change: func(in *GrantInput) { data(in).Bridge.Name = "pnbr-other" },
			want: []want{{iface: "net1", reason: []string{"bridge pnbr-data is now pnbr-other", `network "data" of profile "p"`}}}},
		{name: "master changed", change: func(in *GrantInput) { in.Profiles[0].Spec.Networks[1].Macvlan.Master = "eth2" },
			want: []want{{iface: "net2", reason: []string{"master eth1 is now eth2"}}}},
		{name: "macvlan mode changed", change: func(in *GrantInput) { in.Profiles[0].Spec.Networks[1].Macvlan.Mode = "private" },
			want: []want{{iface: "net2", reason: []string{"mode bridge is now private"}}}},
		{name: "vni changed", change: func(in *GrantInput) { in.Profiles[0].Spec.Networks[2].Bridge.VXLAN.VNI = 1002 },
			want: []want{{iface: "net3", reason: []string{"vxlan vni 1001 port 4789 is now vni 1002 port 4789"}}}},
		{name: "kind changed", change: func(in *GrantInput) {
			in.Profiles[0].Spec.Networks[3].Bridge = nil
			in.Profiles[0].Spec.Networks[3].Macvlan = &v1alpha1.MacvlanNetwork{Master: "eth1"}
		}, want: []want{{iface: "net4", reason: []string{"kind bridge is now macvlan", "bridge pnbr-lan is now none"}}}},
		{name: "raw sockets no longer allowed", change: func(in *GrantInput) { data(in).AllowRawSockets = false },
			want: []want{{iface: "net1", reason: []string{"raw sockets", "allowRawSockets is false", "NET_RAW"}}}},
		{name: "maxInterfaces lowered", change: func(in *GrantInput) { in.Profiles[0].Spec.MaxInterfaces = 2 },
			want: []want{
				{iface: "net3", reason: []string{"interface net3 is interface 3", `profile "p"`, "maxInterfaces 2"}},
				{iface: "net4", reason: []string{"interface net4 is interface 4", "maxInterfaces 2"}},
			}},
		{name: "a detached interface frees its place", change: func(in *GrantInput) {
			in.Profiles[0].Spec.MaxInterfaces = 3
			data(in).Bridge.Name = "pnbr-other"
		}, want: []want{{iface: "net1", reason: []string{"bridge pnbr-data is now pnbr-other"}}}},
		{name: "profile broken", change: func(in *GrantInput) { in.Profiles[0].Spec.MaxInterfaces = 40 },
			want: []want{
				{iface: "net1", reason: []string{`profile "p"`, "maxInterfaces 40 outside 1-32", "an admin must fix the profile"}},
				{iface: "net2", reason: []string{`profile "p"`, "maxInterfaces 40"}},
				{iface: "net3", reason: []string{"maxInterfaces 40"}},
				{iface: "net4", reason: []string{"maxInterfaces 40"}},
			}},
		{name: "network broken", change: func(in *GrantInput) { data(in).MTU.Min = i32(9500) },
			want: []want{{iface: "net1", reason: []string{"mtu 9000", `profile "p" has mtu range 9500-9000`, "an admin must fix the profile"}}}},
		{name: "network offered differently by a second profile", change: func(in *GrantInput) {
			q := in.Profiles[0].DeepCopy()
			q.Name = "q"
			q.Spec.Networks = []v1alpha1.Network{{Name: "lan", Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-b"}}}
			in.Profiles = append(in.Profiles, *q)
		}, want: []want{{iface: "net4", reason: []string{`network "lan" is offered differently by profiles "p" and "q"`}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := narrowFixture()
			approved := in.Approval.Interfaces
			tc.change(&in)
			// The agent hands Revoked its cache's own profiles.
			profiles := make([]v1alpha1.NetworkProfile, len(in.Profiles))
			for i := range in.Profiles {
				in.Profiles[i].DeepCopyInto(&profiles[i])
			}
			got := Revoked(in)
			if !reflect.DeepEqual(in.Profiles, profiles) {
				t.Fatal("Revoked changed the profiles it was given")
			}
			if len(got) != len(tc.want) {
				t.Fatalf("Revoked = %+v, want %d revocations", got, len(tc.want))
			}
			for i, w := range tc.want {
				r := got[i]
				if r.Interface != w.iface {
					t.Fatalf("revocation %d is of %s, want %s", i, r.Interface, w.iface)
				}
				for _, part := range w.reason {
					if !strings.Contains(r.Reason, part) {
						t.Errorf("%s: reason %q does not name %q", r.Interface, r.Reason, part)
					}
				}
				if w.inPlace == nil {
					if !r.Detached() {
						t.Errorf("%s: narrowed in place to %+v, want detached", r.Interface, *r.Narrowed)
					}
					continue
				}
				if r.Detached() {
					t.Fatalf("%s: detached (%s), want narrowed in place", r.Interface, r.Reason)
				}
				wantIface := approvedNamed(approved, w.iface)
				w.inPlace(&wantIface)
				if !reflect.DeepEqual(*r.Narrowed, wantIface) {
					t.Errorf("%s narrowed to\n%+v\nwant\n%+v", r.Interface, *r.Narrowed, wantIface)
				}
			}
		})
	}
}

func approvedNamed(ais []v1alpha1.ApprovedInterface, name string) v1alpha1.ApprovedInterface {
	for _, ai := range ais {
		if ai.Interface == name {
			c := ai
			c.Routes = append([]v1alpha1.ApprovedRoute(nil), ai.Routes...)
			return c
		}
	}
	panic("no interface " + name)
}

// TestNarrow checks what the agent builds from an approval and a
// judgement: detached interfaces go, narrowed ones are replaced, the rest
// stays as approved, and nothing is ever added.
func TestNarrow(t *testing.T) {
	a := narrowFixture().Approval
	a.PrimaryMTU = 8900
	lowered := a.Interfaces[0]
	lowered.MTU = 1500
	tests := []struct {
		name string
		revs []Revocation
		want func() []v1alpha1.ApprovedInterface
		mtu  int32
	}{
		{name: "nothing revoked", want: func() []v1alpha1.ApprovedInterface { return a.Interfaces }, mtu: 8900},
		{name: "one narrowed, one detached", revs: []Revocation{
			{Interface: "net1", Narrowed: &lowered}, {Interface: "net3"},
		}, want: func() []v1alpha1.ApprovedInterface {
			return []v1alpha1.ApprovedInterface{lowered, a.Interfaces[1], a.Interfaces[3]}
		}, mtu: 8900},
		{name: "all detached", revs: []Revocation{{Interface: "net1"}, {Interface: "net2"}, {Interface: "net3"}, {Interface: "net4"}},
			want: func() []v1alpha1.ApprovedInterface { return nil }},
		{name: "revocation of an unknown interface adds nothing", revs: []Revocation{{Interface: "net9", Narrowed: &lowered}},
			want: func() []v1alpha1.ApprovedInterface { return a.Interfaces }, mtu: 8900},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Narrow(a, tc.revs)
			if !reflect.DeepEqual(got.Interfaces, tc.want()) || got.PrimaryMTU != tc.mtu {
				t.Fatalf("Narrow =\n%+v (primary mtu %d)\nwant\n%+v (primary mtu %d)", got.Interfaces, got.PrimaryMTU, tc.want(), tc.mtu)
			}
			if len(a.Interfaces) != 4 || a.Interfaces[0].MTU != 9000 {
				t.Fatal("Narrow changed the approval it was given")
			}
		})
	}
}

// TestRevokedLeavesSLAACAddresses: the status of an interface that asked
// for SLAAC lists the address the kernel made from a router's prefix,
// which no pool holds; judging the grant again leaves it alone. The same
// address on an interface without SLAAC is outside the pools, and the
// interface goes.
func TestRevokedLeavesSLAACAddresses(t *testing.T) {
	in := narrowFixture()
	in.Profiles[0].Spec.Networks[3].AcceptRouterAdvertisements = true
	in.Approval.Interfaces[3].SLAAC = true
	in.Addresses = map[string][]netip.Addr{"net4": {netip.MustParseAddr("fd00:69::1")}}
	if got := Revoked(in); len(got) != 0 {
		t.Fatalf("SLAAC address judged: %+v", got)
	}
	in.Addresses = map[string][]netip.Addr{"net1": {netip.MustParseAddr("10.1.0.7"), netip.MustParseAddr("fd00:69::1")}}
	got := Revoked(in)
	if len(got) != 1 || got[0].Interface != "net1" || !got[0].Detached() || !strings.Contains(got[0].Reason, "fd00:69::1 is outside the pools") {
		t.Fatalf("an address outside the pools of an interface without SLAAC: %+v", got)
	}
}
