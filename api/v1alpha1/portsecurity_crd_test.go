package v1alpha1_test

import (
	"testing"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// TestCRDPortSecurityKinds: portSecurity applies to every kind whose
// pods share a layer 2 with others (bridge, vlan, macvlan, ipvlan), and is
// refused on a tunnel, which carries no frames of other pods.
func TestCRDPortSecurityKinds(t *testing.T) {
	env := testenv.Shared(t)
	ps := &v1alpha1.PortSecurityPolicy{AllowRouters: true}
	for _, tc := range []struct {
		name string
		n    v1alpha1.Network
		want string // "" = accepted
	}{
		{"bridge", v1alpha1.Network{Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-ps"}}, ""},
		{"macvlan", v1alpha1.Network{Macvlan: &v1alpha1.MacvlanNetwork{Master: "eth1"}}, ""},
		{"ipvlan", v1alpha1.Network{IPVlan: &v1alpha1.IPVlanNetwork{Master: "eth1"}}, ""},
		{"tunnel", v1alpha1.Network{Tunnel: &v1alpha1.TunnelNetwork{WireGuard: &v1alpha1.WireGuardTunnel{},
			Endpoints: []v1alpha1.TunnelEndpoint{{CIDR: "203.0.113.0/24", Ports: []string{"51820"}}}}}, "a tunnel interface carries no frames of other pods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.n
			n.Name, n.PortSecurity = "n", ps
			requireNetworkVerdict(t, env, "ps-"+tc.name, n, tc.want)
		})
	}
}
