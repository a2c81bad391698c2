package policy

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// quotaProfile is a valid profile offering one network with one pool;
// sel nil selects the namespaces labelled tier=tenants.
func quotaProfile(name, network string, kind func(*v1alpha1.Network), pool string, max *int32, unlimited bool, sel *metav1.LabelSelector) v1alpha1.NetworkProfile {
	n := v1alpha1.Network{Name: network, IPAM: &v1alpha1.IPAM{Pools: []string{pool}, MaxAddressesPerNamespace: max, UnlimitedAddressesPerNamespace: unlimited}}
	kind(&n)
	p := v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NetworkProfileSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "tenants"}},
		MaxInterfaces:     4, Networks: []v1alpha1.Network{n}}}
	if sel != nil {
		p.Spec.NamespaceSelector = *sel
	}
	return p
}

func onBridge(name string) func(*v1alpha1.Network) {
	return func(n *v1alpha1.Network) { n.Bridge = &v1alpha1.BridgeNetwork{Name: name} }
}

func onMacvlan(master string) func(*v1alpha1.Network) {
	return func(n *v1alpha1.Network) { n.Macvlan = &v1alpha1.MacvlanNetwork{Master: master} }
}

func pinned(ns string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{namespaceNameLabel: ns}}
}

// TestSpaceQuotas: one quota per address space, the strictest of every
// profile on it, whichever profile a pod comes through; a default on a
// space more than one namespace can draw from unless a cap or
// "unlimited" is said explicitly.
func TestSpaceQuotas(t *testing.T) {
	for _, tc := range []struct {
		name     string
		profiles []v1alpha1.NetworkProfile
		want     map[string]int32
	}{
		{"a cap", []v1alpha1.NetworkProfile{
			quotaProfile("p", "a", onBridge("br1"), "10.0.0.0/24", i32(2), false, nil),
		}, map[string]int32{"br1.bridge": 2}},
		{"a second, uncapped profile on the same bridge gets the first's cap", []v1alpha1.NetworkProfile{
			quotaProfile("p", "a", onBridge("br1"), "10.0.0.0/24", i32(2), false, nil),
			quotaProfile("p2", "b", onBridge("br1"), "10.0.0.0/24", nil, false, nil),
		}, map[string]int32{"br1.bridge": 2}},
		{"even when it says unlimited", []v1alpha1.NetworkProfile{
			quotaProfile("p", "a", onBridge("br1"), "10.0.0.0/24", i32(2), false, nil),
			quotaProfile("p2", "b", onBridge("br1"), "10.0.0.0/24", nil, true, nil),
		}, map[string]int32{"br1.bridge": 2}},
		{"the strictest of two caps on one bridge, other pools", []v1alpha1.NetworkProfile{
			quotaProfile("p", "a", onBridge("br1"), "10.0.0.0/24", i32(7), false, nil),
			quotaProfile("p2", "b", onBridge("br1"), "10.0.1.0/24", i32(3), false, nil),
		}, map[string]int32{"br1.bridge": 3}},
		{"the same CIDR on two bridges: two quotas", []v1alpha1.NetworkProfile{
			quotaProfile("p", "a", onBridge("br1"), "10.0.0.0/24", i32(2), false, nil),
			quotaProfile("p2", "b", onBridge("br2"), "10.0.0.0/24", i32(9), false, nil),
		}, map[string]int32{"br1.bridge": 2, "br2.bridge": 9}},
		{"no cap on a shared pool: half of it", []v1alpha1.NetworkProfile{
			quotaProfile("p", "a", onBridge("br1"), "10.0.0.0/29", nil, false, nil),
		}, map[string]int32{"br1.bridge": 3}},
		{"the default is of the smallest pool, without its gateway", []v1alpha1.NetworkProfile{
			func() v1alpha1.NetworkProfile {
				p := quotaProfile("p", "a", onBridge("br1"), "10.0.0.0/28", nil, false, nil)
				p.Spec.Networks[0].IPAM.Pools = append(p.Spec.Networks[0].IPAM.Pools, "fd00::/64")
				p.Spec.Networks[0].IPAM.Gateways = []string{"10.0.0.1"}
				return p
			}(),
		}, map[string]int32{"br1.bridge": 6}},
		{"the default never exceeds the largest cap", []v1alpha1.NetworkProfile{
			quotaProfile("p", "a", onBridge("br1"), "10.0.0.0/8", nil, false, nil),
		}, map[string]int32{"br1.bridge": MaxAddressesPerNamespace}},
		{"a /31 shared by two namespaces: one each", []v1alpha1.NetworkProfile{
			quotaProfile("p", "a", onBridge("br1"), "10.0.0.0/31", nil, false, nil),
		}, map[string]int32{"br1.bridge": 1}},
		{"a default and a cap: the stricter", []v1alpha1.NetworkProfile{
			quotaProfile("p", "a", onBridge("br1"), "10.0.0.0/29", nil, false, nil),
			quotaProfile("p2", "b", onBridge("br1"), "10.0.0.0/24", i32(5), false, nil),
		}, map[string]int32{"br1.bridge": 3}},
		{"unlimited, explicitly: no cap", []v1alpha1.NetworkProfile{
			quotaProfile("p", "a", onBridge("br1"), "10.0.0.0/29", nil, true, nil),
		}, map[string]int32{}},
		{"a pool of one namespace, pinned by name: no default", []v1alpha1.NetworkProfile{
			quotaProfile("p", "a", onBridge("br1"), "10.0.0.0/29", nil, false, pinned("t1")),
			quotaProfile("p2", "b", onBridge("br1"), "10.0.0.0/29", nil, false, pinned("t1")),
		}, map[string]int32{}},
		{"pinned by an In expression of one name", []v1alpha1.NetworkProfile{
			quotaProfile("p", "a", onBridge("br1"), "10.0.0.0/29", nil, false, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: namespaceNameLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"t1"}}}}),
		}, map[string]int32{}},
		{"two profiles pinning two namespaces share the space: default", []v1alpha1.NetworkProfile{
			quotaProfile("p", "a", onBridge("br1"), "10.0.0.0/29", nil, false, pinned("t1")),
			quotaProfile("p2", "b", onBridge("br1"), "10.0.0.0/29", nil, false, pinned("t2")),
		}, map[string]int32{"br1.bridge": 3}},
		{"a pinned profile and a shared one: default", []v1alpha1.NetworkProfile{
			quotaProfile("p", "a", onBridge("br1"), "10.0.0.0/29", nil, false, pinned("t1")),
			quotaProfile("p2", "b", onBridge("br1"), "10.0.0.0/29", nil, false, nil),
		}, map[string]int32{"br1.bridge": 3}},
		{"macvlan, ipvlan and vlan on one master share one quota", []v1alpha1.NetworkProfile{
			quotaProfile("p", "a", onMacvlan("eth1"), "10.0.0.0/24", i32(4), false, nil),
			quotaProfile("p2", "b", func(n *v1alpha1.Network) { n.IPVlan = &v1alpha1.IPVlanNetwork{Master: "eth1"} }, "10.0.1.0/24", i32(8), false, nil),
		}, map[string]int32{"eth1.link": 4}},
		{"a broken profile counts for nothing", []v1alpha1.NetworkProfile{
			quotaProfile("p", "a", onBridge("br1"), "10.0.0.0/24", i32(5000), false, nil),
		}, map[string]int32{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SpaceQuotas(tc.profiles)
			if len(got) != len(tc.want) {
				t.Fatalf("SpaceQuotas = %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("SpaceQuotas = %v, want %v", got, tc.want)
				}
			}
			// The order of the profiles never matters.
			rev := make([]v1alpha1.NetworkProfile, len(tc.profiles))
			for i, p := range tc.profiles {
				rev[len(rev)-1-i] = p
			}
			if back := SpaceQuotas(rev); len(back) != len(got) {
				t.Fatalf("reversed: %v, in order: %v", back, got)
			}
		})
	}
}

// TestDecideSignsTheSpaceQuota: a pod coming through the uncapped second
// profile gets the first profile's cap signed into its approval, and a
// pod asking for more addresses than that through both profiles at once
// is refused at admission.
func TestDecideSignsTheSpaceQuota(t *testing.T) {
	profiles := []v1alpha1.NetworkProfile{
		quotaProfile("capped", "a", onBridge("br1"), "10.0.0.0/24", i32(2), false, nil),
		quotaProfile("open", "b", onBridge("br1"), "10.0.0.0/24", nil, true, nil),
	}
	ns := telcoNamespace()
	ns.Labels["tier"] = "tenants"
	a, errs := Decide(Input{Namespace: ns, Pod: podWith("b", ""), Profiles: profiles})
	if len(errs) > 0 {
		t.Fatal(joinErrs(errs))
	}
	if got := a.Interfaces[0].IPAM; got.AddressSpace != "br1.bridge" || got.MaxPerNamespace != 2 {
		t.Fatalf("approved ipam %+v, want address space br1.bridge and quota 2", got)
	}
	_, errs = Decide(Input{Namespace: ns, Pod: podWith("a, b, b", ""), Profiles: profiles})
	if msg := joinErrs(errs); len(errs) == 0 || !containsAll(msg, "3 IPv4 addresses of address space br1.bridge", "ipam.maxAddressesPerNamespace 2") {
		t.Fatalf("3 addresses through two profiles of a space capped at 2: %s", msg)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// TestNetworkSpaceIsTheApprovalsSpace: a profile network's address space
// is the one its approved interfaces get, tunnel networks (named after
// the network) included, so that two tunnel networks never share quotas
// or pool usage.
func TestNetworkSpaceIsTheApprovalsSpace(t *testing.T) {
	p := telcoTunnel()
	a, msgs := decideTunnel(t, `[{"name":"wg","endpoint":"203.0.113.9:51821","publicKey":"`+peerKey+`"},{"name":"vx","endpoint":"198.51.100.7:4789","vni":5042}]`)
	if len(msgs) > 0 {
		t.Fatalf("refused: %v", msgs)
	}
	for i := range p.Spec.Networks {
		if got, want := NetworkSpace(&p.Spec.Networks[i]), a.Interfaces[i].IPAM.AddressSpace; got != want {
			t.Errorf("network %s: NetworkSpace %q, approved interface's space %q", p.Spec.Networks[i].Name, got, want)
		}
	}
	if NetworkSpace(&p.Spec.Networks[0]) == NetworkSpace(&p.Spec.Networks[1]) {
		t.Error("two tunnel networks share one address space")
	}
}
