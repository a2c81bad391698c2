package policy

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// spanningProfile offers, to another tenant, a bridge spanning nodes by
// VXLAN with vni on port (0: the default 4789).
func spanningProfile(name string, vni, port int32) v1alpha1.NetworkProfile {
	return v1alpha1.NetworkProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec: v1alpha1.NetworkProfileSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "other"}},
			Networks: []v1alpha1.Network{{
				Name:   "overlay-" + name,
				Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-" + name, VXLAN: &v1alpha1.VXLANSpan{VNI: vni, Port: port}},
			}},
		},
	}
}

// TestTunnelOnSpanningVNI: a VXLAN tunnel of a spanning network's port
// and VNI (any profile's, any tenant's) is refused at admission, naming
// the spanning network; another VNI, or the same VNI on another port, is
// approved. The profiles' conflicts name the same clash on both networks,
// from the same rule, and leave a spanning network of another port alone.
func TestTunnelOnSpanningVNI(t *testing.T) {
	profiles := []v1alpha1.NetworkProfile{telcoTunnel(), telcoData(), spanningProfile("span", 5050, 0), spanningProfile("span4790", 5060, 4790)}
	for _, tc := range []struct {
		name, vni string
		want      []string // substrings of the one error; none: approved
	}{
		{"the spanning network's vni and port", "5050", []string{"vni", "vxlan vni 5050 on endpoint port 4789", `spanning network "overlay-span" (bridge "pnbr-span") in profile "span"`, "another vni or endpoint port"}},
		{"a vni spanning on another port", "5060", nil},
		{"a free vni", "5042", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Namespace: telcoNamespace(), Pod: podWith(`[{"name":"vx","endpoint":"198.51.100.7:4789","vni":`+tc.vni+`}]`, ""), Profiles: profiles}
			for _, prepared := range []bool{false, true} {
				if prepared {
					in.Prepared = NewProfileSet(in.Profiles)
				}
				a, errs := Decide(in)
				if len(tc.want) == 0 {
					if len(errs) > 0 || a == nil {
						t.Fatalf("refused: %v", errs)
					}
					continue
				}
				// The last error says what the namespace may use.
				if len(errs) != 2 || a != nil {
					t.Fatalf("want the refusal and the summary, got %v (approval %v)", errs, a)
				}
				for _, w := range tc.want {
					if !strings.Contains(errs[0].Error(), w) {
						t.Errorf("error %q does not say %q", errs[0], w)
					}
				}
			}
		})
	}

	conflicts := ProfileConflicts(profiles)
	for _, tc := range []struct {
		profile, field string
		want           []string
	}{
		{"telco-tunnel", "spec.networks[1].tunnel.vxlan", []string{`network "vx"`, "vni 5050 port 4789 of spanning network \"overlay-span\"", "pods asking for it are refused"}},
		{"span", "spec.networks[0].bridge.vxlan.vni", []string{`network "overlay-span"`, "vxlan vni 5050 port 4789", `tunnel network "vx" in profile "telco-tunnel"`}},
	} {
		errs := conflicts[tc.profile]
		if len(errs) != 1 || errs[0].Field != tc.field {
			t.Fatalf("conflicts of %s: %v, want one at %s", tc.profile, errs, tc.field)
		}
		for _, w := range tc.want {
			if !strings.Contains(errs[0].Error(), w) {
				t.Errorf("conflict %q does not say %q", errs[0], w)
			}
		}
	}
	if errs := conflicts["span4790"]; len(errs) > 0 {
		t.Fatalf("a spanning network of another port conflicts: %v", errs)
	}
}

// TestTunnelSpanOverlap: the one rule, on ranges and on one port and VNI.
func TestTunnelSpanOverlap(t *testing.T) {
	spans := []spanKey{{port: 4789, vni: 100}, {port: 4790, vni: 200}}
	for _, tc := range []struct {
		ports, vnis []portRange
		want        int
	}{
		{[]portRange{{4789, 4789}}, []portRange{{100, 100}}, 1},
		{[]portRange{{4789, 4789}}, []portRange{{101, 199}}, 0},
		{[]portRange{{4789, 4790}}, []portRange{{1, 1000}}, 2},
		{[]portRange{{4791, 5000}}, []portRange{{1, 1000}}, 0},
		{nil, []portRange{{100, 100}}, 0},
	} {
		if got := tunnelSpanOverlap(tc.ports, tc.vnis, spans); len(got) != tc.want {
			t.Errorf("ports %v vnis %v: %v, want %d", tc.ports, tc.vnis, got, tc.want)
		}
	}
}
