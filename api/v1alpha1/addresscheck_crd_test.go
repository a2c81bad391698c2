package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// TestCRDAddressCheck: addressCheck applies where the pod interface has a
// MAC of its own on a shared segment (bridge, vlan, macvlan); a gateway
// check needs the gateways it asks.
func TestCRDAddressCheck(t *testing.T) {
	env := testenv.Shared(t)
	ipam := &v1alpha1.IPAM{Pools: []string{"192.0.2.0/24"}, Gateways: []string{"192.0.2.1"}}
	dup := &v1alpha1.AddressCheck{Duplicates: true}
	gw := &v1alpha1.AddressCheck{Duplicates: true, Gateway: true}
	for _, tc := range []struct {
		name string
		n    v1alpha1.Network
		want string // "" = accepted
	}{
		{"bridge", v1alpha1.Network{Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-ac"}, AddressCheck: gw, IPAM: ipam}, ""},
		{"macvlan", v1alpha1.Network{Macvlan: &v1alpha1.MacvlanNetwork{Master: "eth1"}, AddressCheck: dup}, ""},
		{"vlan", v1alpha1.Network{VLAN: &v1alpha1.VLANNetwork{Master: "eth1", VLAN: v1alpha1.VLANPolicy{Allowed: []string{"10"}}}, AddressCheck: dup}, ""},
		{"ipvlan", v1alpha1.Network{IPVlan: &v1alpha1.IPVlanNetwork{Master: "eth1"}, AddressCheck: dup}, "ipvlan interfaces share their parent's MAC"},
		{"tunnel", v1alpha1.Network{Tunnel: &v1alpha1.TunnelNetwork{WireGuard: &v1alpha1.WireGuardTunnel{},
			Endpoints: []v1alpha1.TunnelEndpoint{{CIDR: "203.0.113.0/24", Ports: []string{"51820"}}}}, AddressCheck: dup}, "a tunnel has no neighbours to ask"},
		{"gateway without gateways", v1alpha1.Network{Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-ac"}, AddressCheck: gw,
			IPAM: &v1alpha1.IPAM{Pools: []string{"192.0.2.0/24"}}}, "addressCheck.gateway needs ipam.gateways"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.n
			n.Name = "n"
			name := "ac-" + strings.ReplaceAll(tc.name, " ", "-")
			requireNetworkVerdict(t, env, name, n, tc.want)
		})
	}
}

// TestCRDSettings: a network offers per-interface settings by name, each
// range in order; accept_ra only where the network takes router
// advertisements, so that no tenant turns it on elsewhere; offloads by
// names shaped as the kernel's.
func TestCRDSettings(t *testing.T) {
	env := testenv.Shared(t)
	for _, tc := range []struct {
		name string
		n    v1alpha1.Network
		want string // "" = accepted
	}{
		{"ranges", v1alpha1.Network{Settings: []v1alpha1.SettingRange{{Name: "arp_ignore", Min: 0, Max: 2}, {Name: "txqueuelen", Min: 100, Max: 5000}}}, ""},
		{"accept_ra with router advertisements", v1alpha1.Network{AcceptRouterAdvertisements: true, Settings: []v1alpha1.SettingRange{{Name: "accept_ra", Min: 0, Max: 2}}}, ""},
		{"accept_ra without", v1alpha1.Network{Settings: []v1alpha1.SettingRange{{Name: "accept_ra", Min: 0, Max: 2}}}, "accept_ra only on a network with acceptRouterAdvertisements"},
		{"unknown name", v1alpha1.Network{Settings: []v1alpha1.SettingRange{{Name: "accept_redirects", Min: 0, Max: 1}}}, "Unsupported value"},
		{"min above max", v1alpha1.Network{Settings: []v1alpha1.SettingRange{{Name: "arp_ignore", Min: 2, Max: 1}}}, "min must not be above max"},
		{"offloads by kernel name", v1alpha1.Network{Offloads: []string{"tx-checksum-ip-generic", "tx-udp_tnl-segmentation"}}, ""},
		{"offload not a feature name", v1alpha1.Network{Offloads: []string{"../tx"}}, "offloads[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.n
			n.Name, n.Bridge = "n", &v1alpha1.BridgeNetwork{Name: "pnbr-st"}
			name := "st-" + strings.ReplaceAll(strings.ReplaceAll(tc.name, " ", "-"), "_", "-")
			requireNetworkVerdict(t, env, name, n, tc.want)
		})
	}
}

// requireNetworkVerdict creates a profile of the one network n and fails
// unless the API server accepts it (want "") or refuses it saying want.
func requireNetworkVerdict(t *testing.T, env *testenv.Env, name string, n v1alpha1.Network, want string) {
	t.Helper()
	err := env.Client.Create(context.Background(), &v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{n}}})
	switch {
	case want == "" && err != nil:
		t.Fatalf("refused: %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("got %v, want a refusal saying %q", err, want)
	}
}
