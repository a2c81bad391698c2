package policy

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// withVRF is the base profiles with network "data" allowed into VRFs with
// tables 1000-1999 and 4000; "l2" has no vrf.
func withVRF() []v1alpha1.NetworkProfile {
	profiles := baseProfiles()
	for i := range profiles {
		for j := range profiles[i].Spec.Networks {
			if profiles[i].Spec.Networks[j].Name == "data" {
				profiles[i].Spec.Networks[j].VRF = &v1alpha1.VRFPolicy{Tables: []string{"1000-1999", "4000"}}
			}
		}
	}
	return profiles
}

func TestDecideVRFWhereAllowed(t *testing.T) {
	a, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith(`[{"name":"data","vrf":{"vrfname":"red","table":1001}},{"name":"l2"}]`, ""), Profiles: withVRF()})
	if len(errs) > 0 {
		t.Fatalf("denied:\n%s", joinErrs(errs))
	}
	if got, want := a.Interfaces[0].VRF, (&v1alpha1.ApprovedVRF{Name: "red", Table: 1001}); !reflect.DeepEqual(got, want) {
		t.Fatalf("net1 vrf %+v, want %+v", got, want)
	}
	if a.Interfaces[1].VRF != nil {
		t.Fatalf("net2 vrf %+v, want none", a.Interfaces[1].VRF)
	}
	a, errs = Decide(Input{Namespace: telcoNamespace(), Pod: podWith(`[{"name":"data","vrf":{"vrfname":"red","table":4000}},{"name":"data","interface":"net5","vrf":{"vrfname":"red","table":4000}}]`, ""), Profiles: withVRF()})
	if len(errs) > 0 {
		t.Fatalf("two interfaces in one VRF denied:\n%s", joinErrs(errs))
	}
	if a.Interfaces[0].VRF.Table != 4000 || a.Interfaces[1].VRF.Name != "red" {
		t.Fatalf("approved %+v and %+v", a.Interfaces[0].VRF, a.Interfaces[1].VRF)
	}
	// kubectl podnet networks shows the tables.
	for _, n := range OfferList(Input{Namespace: telcoNamespace(), Pod: podWith("", ""), Profiles: withVRF()}).Networks {
		if got := strings.Contains(n.Limits, "vrf tables 1000-1999 4000"); got != (n.Name == "data") {
			t.Errorf("network %s limits %q", n.Name, n.Limits)
		}
	}
}

// TestDecideVRFRefusals: every refusal names the field, the value and the
// limit it broke.
func TestDecideVRFRefusals(t *testing.T) {
	tests := []struct {
		name       string
		annotation string
		profiles   []v1alpha1.NetworkProfile
		want       []string
	}{
		{"profile without vrf", `[{"name":"data","vrf":{"vrfname":"red","table":1001}}]`, baseProfiles(),
			[]string{"[0].vrf", `network "data"`, `profile "telco-data" does not let this network's interfaces into a VRF`, "vrf is not set"}},
		{"network without vrf", `[{"name":"l2","vrf":{"vrfname":"red","table":1001}}]`, withVRF(),
			[]string{"[0].vrf", `network "l2"`, "into a VRF"}},
		{"table not allowed", `[{"name":"data","vrf":{"vrfname":"red","table":2500}}]`, withVRF(),
			[]string{"[0].vrf.table", "2500", `not allowed by profile "telco-data"`, "vrf.tables 1000-1999, 4000"}},
		{"main table", `[{"name":"data","vrf":{"vrfname":"red","table":254}}]`, withVRF(),
			[]string{"[0].vrf.table", "254", "252-255", "main"}},
		{"table zero", `[{"name":"data","vrf":{"vrfname":"red"}}]`, withVRF(),
			[]string{"[0].vrf.table", "within 1-4294967295"}},
		{"table above 32 bits", `[{"name":"data","vrf":{"vrfname":"red","table":4294967296}}]`, withVRF(),
			[]string{"[0].vrf.table", "4294967296", "within 1-4294967295"}},
		{"no name", `[{"name":"data","vrf":{"table":1001}}]`, withVRF(),
			[]string{"[0].vrf.vrfname", "name the VRF"}},
		{"name too long", `[{"name":"data","vrf":{"vrfname":"a-very-long-vrf-name","table":1001}}]`, withVRF(),
			[]string{"[0].vrf.vrfname", "a-very-long-vrf-name", "at most 15 characters"}},
		{"named eth0", `[{"name":"data","vrf":{"vrfname":"eth0","table":1001}}]`, withVRF(),
			[]string{"[0].vrf.vrfname", "eth0", "pod's own interface"}},
		{"named like an interface", `[{"name":"data","vrf":{"vrfname":"net2","table":1001}},{"name":"l2"}]`, withVRF(),
			[]string{"[0].vrf.vrfname", "net2", `element 1 (network "l2")`, "different names"}},
		{"one name two tables", `[{"name":"data","vrf":{"vrfname":"red","table":1001}},{"name":"data","interface":"net5","vrf":{"vrfname":"red","table":1002}}]`, withVRF(),
			[]string{"[1].vrf.table", "1002", `VRF "red" has table 1001 in element 0`, "one VRF has one table"}},
		{"one table two names", `[{"name":"data","vrf":{"vrfname":"red","table":1001}},{"name":"data","interface":"net5","vrf":{"vrfname":"blue","table":1001}}]`, withVRF(),
			[]string{"[1].vrf.table", "1001", `already belongs to VRF "red"`, "two tables"}},
		{"with the default route", `[{"name":"data","default-route":["192.168.100.1"],"vrf":{"vrfname":"red","table":1001}}]`, withVRF(),
			[]string{"[0].vrf", "cannot carry the pod's default route", "table 1001"}},
		{"on the primary interface", `[{"interface":"eth0","mtu":1400,"vrf":{"vrfname":"red","table":1001}}]`, withVRF(),
			[]string{"[0].vrf", "only its mtu may be tuned"}},
		{"unknown key", `[{"name":"data","vrf":{"vrfname":"red","table":1001,"vni":7}}]`, withVRF(),
			[]string{"vni"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith(tc.annotation, ""), Profiles: tc.profiles})
			if len(errs) == 0 {
				t.Fatalf("approved %+v", a)
			}
			requireErr(t, errs, tc.want...)
		})
	}
}

func TestValidateNetworkProfileVRFTables(t *testing.T) {
	tests := []struct {
		tables []string
		want   string // "" = valid
	}{
		{[]string{"1000-1999", "4000"}, ""},
		{[]string{"1", "256-4294967295"}, ""},
		{nil, "without tables"},
		{[]string{"0"}, `"0" that is not within 1-4294967295`},
		{[]string{"2000-1000"}, "ascending order"},
		{[]string{"4294967296"}, "not within"},
		{[]string{"100-300"}, `"100-300" that includes 252-255`},
		{[]string{"254"}, "includes 252-255"},
		{[]string{"red"}, "not within"},
	}
	for _, tc := range tests {
		p := telcoData()
		p.Spec.Networks[0].VRF = &v1alpha1.VRFPolicy{Tables: tc.tables}
		errs := ValidateNetworkProfile(&p)
		if tc.want == "" {
			if len(errs) > 0 {
				t.Errorf("tables %v refused: %v", tc.tables, errs)
			}
			continue
		}
		if len(errs) == 0 {
			t.Errorf("tables %v accepted, want %q", tc.tables, tc.want)
			continue
		}
		requireErr(t, errs, "networks[0].vrf.tables", tc.want)
	}
}

// TestRevokedVRF: an admin who narrows the tables below a running pod's
// VRF table, or takes vrf away, detaches the interface (it is not moved
// into the main table); widening or keeping the table leaves it.
func TestRevokedVRF(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t1", Labels: map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "a"}}}
	profiles := []v1alpha1.NetworkProfile{{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: v1alpha1.NetworkProfileSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "a"}},
			MaxInterfaces:     2,
			Networks: []v1alpha1.Network{{
				Name:   "data",
				Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-data"},
				Routes: &v1alpha1.RoutePolicy{Allowed: []string{"10.50.0.0/16"}},
				VRF:    &v1alpha1.VRFPolicy{Tables: []string{"1000-1999"}},
			}, {
				Name:   "lan",
				Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-lan"},
			}},
		},
	}}
	req := `[{"name":"data","routes":[{"dst":"10.50.0.0/16"}],"vrf":{"vrfname":"red","table":1001}},{"name":"lan"}]`
	vrf := func(in *GrantInput) **v1alpha1.VRFPolicy { return &in.Profiles[0].Spec.Networks[0].VRF }
	tests := []struct {
		name   string
		change func(in *GrantInput)
		reason []string // nil: stands
	}{
		{"stands", func(*GrantInput) {}, nil},
		{"widened", func(in *GrantInput) { (*vrf(in)).Tables = []string{"1-251", "256-65535"} }, nil},
		{"table range narrowed", func(in *GrantInput) { (*vrf(in)).Tables = []string{"1500-1599"} },
			[]string{"vrf.table 1001", `not allowed by profile "p"`, "vrf.tables 1500-1599"}},
		{"vrf taken away", func(in *GrantInput) { *vrf(in) = nil },
			[]string{"vrf", `profile "p" does not let this network's interfaces into a VRF`}},
		{"tables broken", func(in *GrantInput) { (*vrf(in)).Tables = []string{"200-300"} },
			[]string{"vrf.table 1001", "includes 252-255", "an admin must fix the profile"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := GrantInput{Namespace: ns, Profiles: []v1alpha1.NetworkProfile{*profiles[0].DeepCopy()}, Approval: decided(req, ns, profiles)}
			if got := in.Approval.Interfaces[0].VRF; got == nil || got.Table != 1001 {
				t.Fatalf("approved vrf %+v", got)
			}
			tc.change(&in)
			got := Revoked(in)
			if tc.reason == nil {
				if len(got) > 0 {
					t.Fatalf("Revoked = %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Interface != "net1" || !got[0].Detached() {
				t.Fatalf("Revoked = %+v, want net1 detached", got)
			}
			for _, part := range tc.reason {
				if !strings.Contains(got[0].Reason, part) {
					t.Errorf("reason %q does not name %q", got[0].Reason, part)
				}
			}
			if left := Narrow(in.Approval, got); len(left.Interfaces) != 1 || left.Interfaces[0].Interface != "net2" {
				t.Errorf("narrowed approval keeps %+v, want net2 only", left.Interfaces)
			}
		})
	}
}

// checkVRFsWithinLimits: every approved VRF has a table its network allows,
// and a pod's VRF names and tables pair one to one.
func checkVRFsWithinLimits(t *testing.T, a *v1alpha1.Approval, profiles []v1alpha1.NetworkProfile) {
	t.Helper()
	tables, names := map[string]uint32{}, map[uint32]string{}
	for _, ai := range a.Interfaces {
		if ai.VRF == nil {
			continue
		}
		var n *v1alpha1.Network
		for i := range profiles {
			for j := range profiles[i].Spec.Networks {
				if profiles[i].Name == ai.Profile && profiles[i].Spec.Networks[j].Name == ai.Network {
					n = &profiles[i].Spec.Networks[j]
				}
			}
		}
		if n == nil || n.VRF == nil {
			t.Fatalf("%s: vrf %+v approved on a network without vrf", ai.Interface, ai.VRF)
		}
		ranges, err := parseTableRanges(n.VRF.Tables)
		if err != nil || !ranges.contains(ai.VRF.Table) {
			t.Fatalf("%s: vrf table %d outside %v", ai.Interface, ai.VRF.Table, n.VRF.Tables)
		}
		if tb, ok := tables[ai.VRF.Name]; ok && tb != ai.VRF.Table {
			t.Fatalf("vrf %q approved with tables %d and %d", ai.VRF.Name, tb, ai.VRF.Table)
		}
		if nm, ok := names[ai.VRF.Table]; ok && nm != ai.VRF.Name {
			t.Fatalf("table %d approved for vrfs %q and %q", ai.VRF.Table, nm, ai.VRF.Name)
		}
		tables[ai.VRF.Name], names[ai.VRF.Table] = ai.VRF.Table, ai.VRF.Name
		if ai.DefaultRoute != nil {
			t.Fatalf("%s: default route approved for an interface in vrf %q", ai.Interface, ai.VRF.Name)
		}
	}
}
