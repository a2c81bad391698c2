package policy

import (
	"net/netip"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

func grantFixture() GrantInput {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t1", Labels: map[string]string{v1alpha1.EnabledLabel: "true", "podnet.io/tenant": "telco"}}}
	profiles := []v1alpha1.NetworkProfile{{
		ObjectMeta: metav1.ObjectMeta{Name: "telco"},
		Spec: v1alpha1.NetworkProfileSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"podnet.io/tenant": "telco"}},
			Networks: []v1alpha1.Network{
				{Name: "data", Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-data"}, IPAM: &v1alpha1.IPAM{Pools: []string{"10.1.0.0/16", "fd00:1::/64"}}},
				{Name: "uplink", Macvlan: &v1alpha1.MacvlanNetwork{Master: "eth1"}},
			},
		},
	}}
	return GrantInput{
		Namespace: ns,
		Profiles:  profiles,
		// The approval is the webhook's own, so that it stands as long as
		// nothing changes.
		Approval:  decided("data, uplink", ns, profiles),
		Addresses: map[string][]netip.Addr{"net1": {netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("fd00:1::5")}},
	}
}

// decided is the approval the webhook gives a pod asking for annotation.
func decided(annotation string, ns *corev1.Namespace, profiles []v1alpha1.NetworkProfile) *v1alpha1.Approval {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns.Name, Annotations: map[string]string{v1alpha1.NetworksAnnotation: annotation}}}
	a, errs := Decide(Input{Namespace: ns, Pod: pod, Profiles: profiles})
	if len(errs) > 0 {
		panic(errs.ToAggregate())
	}
	return a
}

func TestRevoked(t *testing.T) {
	both := func(reason string) []Revocation {
		return []Revocation{{Interface: "net1", Network: "data", Reason: reason}, {Interface: "net2", Network: "uplink", Reason: reason}}
	}
	tests := []struct {
		name   string
		change func(in *GrantInput)
		want   []Revocation
	}{
		{name: "stands", change: func(*GrantInput) {}},
		{name: "namespace gone", change: func(in *GrantInput) { in.Namespace = nil }, want: both(`namespace "t1" is gone`)},
		{name: "opt-in label removed", change: func(in *GrantInput) { delete(in.Namespace.Labels, v1alpha1.EnabledLabel) },
			want: both(`namespace "t1" is no longer opted in (label podnet.io/enabled=true)`)},
		{name: "opt-in label false", change: func(in *GrantInput) { in.Namespace.Labels[v1alpha1.EnabledLabel] = "false" },
			want: both(`namespace "t1" is no longer opted in (label podnet.io/enabled=true)`)},
		{name: "other namespace", change: func(in *GrantInput) { in.Namespace.Name = "t2" },
			want: both(`the approval was issued for namespace "t1", not "t2"`)},
		{name: "profile deleted", change: func(in *GrantInput) { in.Profiles = nil }, want: both(`profile "telco" is gone`)},
		{name: "profile being deleted", change: func(in *GrantInput) { in.Profiles[0].DeletionTimestamp = &metav1.Time{} }, want: both(`profile "telco" is gone`)},
		{name: "namespace no longer selected", change: func(in *GrantInput) { in.Namespace.Labels["podnet.io/tenant"] = "other" },
			want: both(`profile "telco" no longer selects namespace "t1"`)},
		{name: "network removed", change: func(in *GrantInput) { in.Profiles[0].Spec.Networks = in.Profiles[0].Spec.Networks[:1] },
			want: []Revocation{{Interface: "net2", Network: "uplink", Reason: `profile "telco" no longer offers network "uplink"`}}},
		{name: "pool shrunk", change: func(in *GrantInput) { in.Profiles[0].Spec.Networks[0].IPAM.Pools[0] = "10.1.0.0/24" },
			want: []Revocation{{Interface: "net1", Network: "data", Reason: `address 10.1.2.3 is outside the pools of network "data" in profile "telco" ([10.1.0.0/24 fd00:1::/64])`}}},
		{name: "pool shrunk elsewhere", change: func(in *GrantInput) { in.Profiles[0].Spec.Networks[0].IPAM.Pools[0] = "10.1.2.0/24" }},
		{name: "ipam removed", change: func(in *GrantInput) { in.Profiles[0].Spec.Networks[0].IPAM = nil },
			want: []Revocation{{Interface: "net1", Network: "data", Reason: `network "data" of profile "telco" no longer assigns addresses`}}},
		{name: "broken selector", change: func(in *GrantInput) {
			in.Profiles[0].Spec.NamespaceSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Bogus"}}
		}, want: both(`profile "telco" has an invalid namespaceSelector: key "x": "Bogus" is not a valid label selector operator`)},
		{name: "no approval", change: func(in *GrantInput) { in.Approval = nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := grantFixture()
			tc.change(&in)
			if got := Revoked(in); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Revoked =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}
