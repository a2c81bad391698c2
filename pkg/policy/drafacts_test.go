package policy

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"podnet.io/podnet/api/v1alpha1"
)

func TestNetworkDeviceFacts(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    v1alpha1.Network
		want DeviceFacts
	}{
		{"bridge without limits", v1alpha1.Network{Bridge: &v1alpha1.BridgeNetwork{Name: "br0"}},
			DeviceFacts{Kind: v1alpha1.KindBridge, MTUMax: 65535}},
		{"bridge uplink is the nic", v1alpha1.Network{Bridge: &v1alpha1.BridgeNetwork{Name: "br0", Uplink: &v1alpha1.UplinkSpan{Interface: "eth2"}}},
			DeviceFacts{Kind: v1alpha1.KindBridge, NIC: "eth2", MTUMax: 65535}},
		{"bridge vxlan lowers the mtu", v1alpha1.Network{Bridge: &v1alpha1.BridgeNetwork{Name: "br0", VXLAN: &v1alpha1.VXLANSpan{VNI: 7, UnderlayMTU: 1500}}},
			DeviceFacts{Kind: v1alpha1.KindBridge, MTUMax: 1450}},
		{"vlan ranges and default", v1alpha1.Network{MTU: &v1alpha1.MTURange{Max: ptr.To[int32](9000)},
			VLAN: &v1alpha1.VLANNetwork{Master: "eth1", VLAN: v1alpha1.VLANPolicy{Default: ptr.To[int32](50), Allowed: []string{"100-199", "300"}}}},
			DeviceFacts{Kind: v1alpha1.KindVLAN, NIC: "eth1", MTUMax: 9000, VLANMin: 50, VLANMax: 300}},
		{"macvlan master", v1alpha1.Network{Macvlan: &v1alpha1.MacvlanNetwork{Master: "eth1"}},
			DeviceFacts{Kind: v1alpha1.KindMacvlan, NIC: "eth1", MTUMax: 65535}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NetworkDeviceFacts(&tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNetworkDeviceFactsRefusesBrokenNetworks(t *testing.T) {
	for _, tc := range []struct {
		n    v1alpha1.Network
		want string
	}{
		{v1alpha1.Network{Name: "none"}, `network "none": sets 0 of`},
		{v1alpha1.Network{Name: "bad", Bridge: &v1alpha1.BridgeNetwork{Name: "br0", VLAN: &v1alpha1.VLANPolicy{Allowed: []string{"9-5"}}}},
			`network "bad": bridge.vlan.allowed has vlan range "9-5"`},
	} {
		if _, err := NetworkDeviceFacts(&tc.n); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.n.Name, err, tc.want)
		}
	}
}
