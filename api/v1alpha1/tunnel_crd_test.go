package v1alpha1_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// TestCRDTunnel installs the generated CRDs in a real kube-apiserver: a
// valid tunnel network is stored, and each rule refuses a bad one naming
// what to fix.
func TestCRDTunnel(t *testing.T) {
	env := testenv.Shared(t)
	ctx := context.Background()
	vni := int32(5000)
	ep := []v1alpha1.TunnelEndpoint{{CIDR: "203.0.113.0/24", Ports: []string{"51820-51829"}}}
	for i, tc := range []struct {
		name string
		n    v1alpha1.TunnelNetwork
		want []string // nil = accepted
	}{
		{"wireguard", v1alpha1.TunnelNetwork{WireGuard: &v1alpha1.WireGuardTunnel{}, Endpoints: ep}, nil},
		{"vxlan", v1alpha1.TunnelNetwork{VXLAN: &v1alpha1.VXLANTunnel{VNIs: []string{"5000-5099"}}, Endpoints: ep, Underlay: &v1alpha1.VXLANLocal{Interface: "eth1"}}, nil},
		{"both kinds", v1alpha1.TunnelNetwork{WireGuard: &v1alpha1.WireGuardTunnel{}, VXLAN: &v1alpha1.VXLANTunnel{VNI: &vni}, Endpoints: ep}, []string{"set exactly one of tunnel.wireguard and tunnel.vxlan"}},
		{"underlay on wireguard", v1alpha1.TunnelNetwork{WireGuard: &v1alpha1.WireGuardTunnel{}, Endpoints: ep, Underlay: &v1alpha1.VXLANLocal{Interface: "eth1"}}, []string{"tunnel.underlay applies to vxlan tunnels"}},
		{"no vni", v1alpha1.TunnelNetwork{VXLAN: &v1alpha1.VXLANTunnel{}, Endpoints: ep}, []string{"set exactly one of vxlan.vni and vxlan.vnis"}},
		{"vni range down", v1alpha1.TunnelNetwork{VXLAN: &v1alpha1.VXLANTunnel{VNIs: []string{"9-2"}}, Endpoints: ep}, []string{"vnis must be VNIs or ascending ranges"}},
		{"host bits", v1alpha1.TunnelNetwork{WireGuard: &v1alpha1.WireGuardTunnel{}, Endpoints: []v1alpha1.TunnelEndpoint{{CIDR: "203.0.113.1/24", Ports: []string{"1"}}}}, []string{"cidr must be a network address"}},
		{"port 0", v1alpha1.TunnelNetwork{WireGuard: &v1alpha1.WireGuardTunnel{}, Endpoints: []v1alpha1.TunnelEndpoint{{CIDR: "203.0.113.0/24", Ports: []string{"0-10"}}}}, []string{"ports must be ports or ascending ranges"}},
		{"no endpoints", v1alpha1.TunnelNetwork{WireGuard: &v1alpha1.WireGuardTunnel{}}, []string{"endpoints"}},
		{"static mac on wireguard", v1alpha1.TunnelNetwork{WireGuard: &v1alpha1.WireGuardTunnel{}, Endpoints: ep}, []string{"a wireguard tunnel has no MAC address"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.n
			err := env.Client.Create(ctx, &v1alpha1.NetworkProfile{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("tunnel-%d", i)},
				Spec:       v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{{Name: "t", Tunnel: &n, AllowStaticMAC: tc.name == "static mac on wireguard"}}},
			})
			expectAdmission(t, err, tc.want)
		})
	}
}
