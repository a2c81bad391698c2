package v1alpha1

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestAddressSpaceOf: the layer-2 domain is the bridge by name, or the
// master link; spanning, VNI, VLAN and mode never split it, and bridges
// and links never share one.
func TestAddressSpaceOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		ai   ApprovedInterface
		want string
	}{
		{"node-local bridge", ApprovedInterface{Kind: KindBridge, Bridge: "pnbr-data"}, "pnbr-data.bridge"},
		{"bridge spanned by vxlan", ApprovedInterface{Kind: KindBridge, Bridge: "pnbr-data", VXLAN: &ApprovedVXLAN{VNI: 1001, Port: 4789}}, "pnbr-data.bridge"},
		{"bridge spanned by an uplink", ApprovedInterface{Kind: KindBridge, Bridge: "pnbr-data", Uplink: "eth2"}, "pnbr-data.bridge"},
		{"bridge access vlan", ApprovedInterface{Kind: KindBridge, Bridge: "pnbr-data", VLAN: 120}, "pnbr-data.bridge"},
		{"another bridge", ApprovedInterface{Kind: KindBridge, Bridge: "pnbr-other"}, "pnbr-other.bridge"},
		{"bridge name as odd as allowed", ApprovedInterface{Kind: KindBridge, Bridge: "Br_0.-"}, "Br_0.-.bridge"},
		{"macvlan", ApprovedInterface{Kind: KindMacvlan, Master: "eth1", Mode: "bridge"}, "eth1.link"},
		{"ipvlan on the same master", ApprovedInterface{Kind: KindIPVlan, Master: "eth1", Mode: "l3"}, "eth1.link"},
		{"vlan on the same master", ApprovedInterface{Kind: KindVLAN, Master: "eth1", VLAN: 305}, "eth1.link"},
		{"a bridge named like a link", ApprovedInterface{Kind: KindBridge, Bridge: "eth1"}, "eth1.bridge"},
		{"unknown kind", ApprovedInterface{Kind: "tunnel", Master: "eth1"}, ""},
	} {
		got := AddressSpaceOf(tc.ai)
		if got != tc.want {
			t.Errorf("%s: AddressSpaceOf = %q, want %q", tc.name, got, tc.want)
		}
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Errorf("%s: %q is not a label value: %v", tc.name, got, errs)
		}
	}
	long := AddressSpaceOf(ApprovedInterface{Kind: KindBridge, Bridge: "abcdefghijklmno"})
	if len(long) > 22 {
		t.Errorf("the longest bridge name gives %q, %d characters", long, len(long))
	}
}
