package policy

import (
	"fmt"
	"strings"

	"podnet.io/podnet/api/v1alpha1"
)

// DeviceFacts are what the devices a node publishes for a network offered
// through Dynamic Resource Allocation say of it, so that a DeviceClass or
// a claim's selector can choose by them. They come from the same kind
// table and limits the approval uses, so a device never promises what the
// webhook would refuse.
type DeviceFacts struct {
	Kind v1alpha1.NetworkKind
	// NIC is the host link the network leaves the node by (the parent of
	// a macvlan, ipvlan or vlan network, a bridge's uplink); "" for none.
	NIC string
	// MTUMax is the largest MTU a pod may ask for.
	MTUMax int32
	// VLANMin and VLANMax bound the VLANs a pod may ask for; both 0 when
	// the network has no VLAN policy.
	VLANMin, VLANMax int32
}

// NetworkDeviceFacts derives n's DeviceFacts; a network that sets no kind
// or a broken VLAN list is an error naming the field.
func NetworkDeviceFacts(n *v1alpha1.Network) (DeviceFacts, error) {
	k, err := kindOf(n)
	if err != nil {
		return DeviceFacts{}, fmt.Errorf("network %q: %w", n.Name, err)
	}
	var ai v1alpha1.ApprovedInterface
	k.approve(n, &ai)
	// mtuCeiling reads the range: without one, the whole MTU range.
	withRange := *n
	if withRange.MTU == nil {
		withRange.MTU = &v1alpha1.MTURange{}
	}
	f := DeviceFacts{Kind: ai.Kind, NIC: ai.Master, MTUMax: mtuCeiling(&withRange)}
	if ai.Kind == v1alpha1.KindBridge {
		f.NIC = ai.Uplink
	}
	if v, path := networkVLANs(n); v != nil {
		rs, err := parseVLANRanges(v.Allowed)
		if err != nil {
			return DeviceFacts{}, fmt.Errorf("network %q: %s %w", n.Name, strings.Join(path, "."), err)
		}
		if v.Default != nil {
			rs = append(rs, vlanRange{*v.Default, *v.Default})
		}
		f.VLANMin, f.VLANMax = rs.bounds()
	}
	return f, nil
}

// bounds is the lowest and highest VLAN of rs, 0 and 0 when empty.
func (rs vlanRanges) bounds() (lo, hi int32) {
	for i, r := range rs {
		if i == 0 || r.lo < lo {
			lo = r.lo
		}
		if r.hi > hi {
			hi = r.hi
		}
	}
	return lo, hi
}
