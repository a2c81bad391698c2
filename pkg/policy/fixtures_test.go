package policy

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

func i32(v int32) *int32 { return &v }

// telcoData offers a richly limited bridge network and a bare one, and
// primary interface tuning.
func telcoData() v1alpha1.NetworkProfile {
	return v1alpha1.NetworkProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "telco-data", Generation: 3},
		Spec: v1alpha1.NetworkProfileSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "telco"}},
			MaxInterfaces:     2,
			Networks: []v1alpha1.Network{{
				Name:   "data",
				Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-data", VLAN: &v1alpha1.VLANPolicy{Default: i32(100), Allowed: []string{"100-199", "250"}}},
				MTU:    &v1alpha1.MTURange{Default: i32(1500), Min: i32(1280), Max: i32(9000)},
				IPAM: &v1alpha1.IPAM{
					Pools:       []string{"192.168.100.0/24", "fd00:100::/64"},
					Gateways:    []string{"192.168.100.1", "fd00:100::1"},
					AllowStatic: true,
				},
				Routes:         &v1alpha1.RoutePolicy{Allowed: []string{"10.50.0.0/16", "fd50::/48"}},
				AllowStaticMAC: true,
			}, {
				Name:   "l2",
				Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-l2"},
			}},
			PrimaryInterface: &v1alpha1.PrimaryInterface{MTU: v1alpha1.MTURange{Min: i32(1280), Max: i32(8900)}},
		},
	}
}

// telcoUplink offers uplinks to the telco namespaces.
func telcoUplink() v1alpha1.NetworkProfile {
	return v1alpha1.NetworkProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "telco-uplink", Generation: 1},
		Spec: v1alpha1.NetworkProfileSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "telco"}},
			Networks: []v1alpha1.Network{
				{Name: "uplink", Macvlan: &v1alpha1.MacvlanNetwork{Master: "eth1"}},
				{Name: "fabric", IPVlan: &v1alpha1.IPVlanNetwork{Master: "eth2", Mode: "l3"}},
				{
					Name: "tagged",
					VLAN: &v1alpha1.VLANNetwork{Master: "eth3", VLAN: v1alpha1.VLANPolicy{Allowed: []string{"300-309"}}},
					IPAM: &v1alpha1.IPAM{Pools: []string{"10.30.0.0/24"}},
				},
			},
		},
	}
}

// otherTenant selects another namespace only.
func otherTenant() v1alpha1.NetworkProfile {
	return v1alpha1.NetworkProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "other"},
		Spec: v1alpha1.NetworkProfileSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "other"}},
			Networks:          []v1alpha1.Network{{Name: "secret", Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-secret"}}},
		},
	}
}

func baseProfiles() []v1alpha1.NetworkProfile {
	return []v1alpha1.NetworkProfile{telcoData(), telcoUplink(), otherTenant()}
}

func telcoNamespace() *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   "t1",
		Labels: map[string]string{"tenant": "telco", v1alpha1.EnabledLabel: "true"},
	}}
}

func podWith(annotation, sa string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "t1", Annotations: map[string]string{v1alpha1.NetworksAnnotation: annotation}},
		Spec:       corev1.PodSpec{ServiceAccountName: sa},
	}
}

// requireErr fails unless one error of errs contains every part: the
// tables use it to assert that a message names the network, the field, the
// value and the limit.
func requireErr(t *testing.T, errs field.ErrorList, parts ...string) {
	t.Helper()
	for _, e := range errs {
		msg := e.Error()
		ok := true
		for _, p := range parts {
			if !strings.Contains(msg, p) {
				ok = false
				break
			}
		}
		if ok {
			return
		}
	}
	t.Fatalf("no error contains all of %q; errors:\n%s", parts, joinErrs(errs))
}

func joinErrs(errs field.ErrorList) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString("  ")
		b.WriteString(e.Error())
		b.WriteString("\n")
	}
	return b.String()
}
