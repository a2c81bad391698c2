package rules

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"podnet.io/podnet/api/v1alpha1"
)

// TestSpaceName: the layer-2 domain is the bridge by name, or the
// master link; spanning, VNI, VLAN and mode never split it, and bridges
// and links never share one.
func TestSpaceName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ai   v1alpha1.ApprovedInterface
		want string
	}{
		{"node-local bridge", v1alpha1.ApprovedInterface{Kind: v1alpha1.KindBridge, Bridge: "pnbr-data"}, "pnbr-data.bridge"},
		{"bridge spanned by vxlan", v1alpha1.ApprovedInterface{Kind: v1alpha1.KindBridge, Bridge: "pnbr-data", VXLAN: &v1alpha1.ApprovedVXLAN{VNI: 1001, Port: 4789}}, "pnbr-data.bridge"},
		{"bridge spanned by an uplink", v1alpha1.ApprovedInterface{Kind: v1alpha1.KindBridge, Bridge: "pnbr-data", Uplink: "eth2"}, "pnbr-data.bridge"},
		{"bridge access vlan", v1alpha1.ApprovedInterface{Kind: v1alpha1.KindBridge, Bridge: "pnbr-data", VLAN: 120}, "pnbr-data.bridge"},
		{"another bridge", v1alpha1.ApprovedInterface{Kind: v1alpha1.KindBridge, Bridge: "pnbr-other"}, "pnbr-other.bridge"},
		{"bridge name as odd as allowed", v1alpha1.ApprovedInterface{Kind: v1alpha1.KindBridge, Bridge: "Br_0.-"}, "Br_0.-.bridge"},
		{"macvlan", v1alpha1.ApprovedInterface{Kind: v1alpha1.KindMacvlan, Master: "eth1", Mode: "bridge"}, "eth1.link"},
		{"ipvlan on the same master", v1alpha1.ApprovedInterface{Kind: v1alpha1.KindIPVlan, Master: "eth1", Mode: "l3"}, "eth1.link"},
		{"vlan on the same master", v1alpha1.ApprovedInterface{Kind: v1alpha1.KindVLAN, Master: "eth1", VLAN: 305}, "eth1.link"},
		{"a bridge named like a link", v1alpha1.ApprovedInterface{Kind: v1alpha1.KindBridge, Bridge: "eth1"}, "eth1.bridge"},
		{"host device", v1alpha1.ApprovedInterface{Kind: v1alpha1.KindHostDevice, Network: "nic", Devices: &v1alpha1.ApprovedDevices{Names: []string{"ens3f*"}}}, "hd0e1733efb6699.nic"},
		{"host device, another selector", v1alpha1.ApprovedInterface{Kind: v1alpha1.KindHostDevice, Network: "nic", Devices: &v1alpha1.ApprovedDevices{Drivers: []string{"ixgbe"}}}, "hd0e1733efb6699.nic"},
		{"unknown kind", v1alpha1.ApprovedInterface{Kind: "tunnel", Master: "eth1"}, ""},
	} {
		got := SpaceName(tc.ai)
		if got != tc.want {
			t.Errorf("%s: SpaceName = %q, want %q", tc.name, got, tc.want)
		}
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Errorf("%s: %q is not a label value: %v", tc.name, got, errs)
		}
	}
	long := SpaceName(v1alpha1.ApprovedInterface{Kind: v1alpha1.KindBridge, Bridge: "abcdefghijklmno"})
	if len(long) > 22 {
		t.Errorf("the longest bridge name gives %q, %d characters", long, len(long))
	}
}
