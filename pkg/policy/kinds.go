package policy

import (
	"errors"
	"fmt"
	"strings"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/hostdev"
)

// networkKind is everything the policy knows of one kind of network: each
// kind has exactly one entry in networkKinds, and kindOf is the only place
// that finds a network's entry. Adding a kind means adding its API type and
// one entry here (and one in the dataplane's table).
type networkKind struct {
	kind v1alpha1.NetworkKind
	// field is the Network field that selects the kind.
	field string
	// set reports whether the network uses this kind.
	set func(n *v1alpha1.Network) bool
	// check refuses link names and modes the CRD would have refused.
	check func(n *v1alpha1.Network) error
	// approve writes the kind's own fields into the approved interface
	// (kind, bridge or master, defaulted mode).
	approve func(n *v1alpha1.Network, a *v1alpha1.ApprovedInterface)
	// vlans is the network's VLAN policy and the field path to it, nil when
	// the kind has none.
	vlans func(n *v1alpha1.Network) (*v1alpha1.VLANPolicy, []string)
	// mtuLimit is the largest MTU the network carries and why (0: no
	// limit of the kind's own; nil: the kind has none).
	mtuLimit func(n *v1alpha1.Network) (int32, string)
	// describe words the kind's own limits for denial messages.
	describe func(n *v1alpha1.Network) []string
	// defaults spells out the kind's defaults in a copy of the network,
	// so that equal definitions compare equal.
	defaults func(n *v1alpha1.Network)
}

// networkKinds lists every kind, in the order messages name them.
var networkKinds = []networkKind{
	{
		kind: v1alpha1.KindBridge, field: "bridge",
		set: func(n *v1alpha1.Network) bool { return n.Bridge != nil },
		check: func(n *v1alpha1.Network) error {
			if err := checkLinkName("bridge.name", n.Bridge.Name); err != nil {
				return err
			}
			return checkSpan(n.Bridge)
		},
		approve: func(n *v1alpha1.Network, a *v1alpha1.ApprovedInterface) {
			a.Kind, a.Bridge = v1alpha1.KindBridge, n.Bridge.Name
			approveSpan(n.Bridge, a)
		},
		mtuLimit: func(n *v1alpha1.Network) (int32, string) {
			if n.Bridge.VXLAN == nil {
				return 0, ""
			}
			return overlayMTU(n.Bridge.VXLAN)
		},
		vlans: func(n *v1alpha1.Network) (*v1alpha1.VLANPolicy, []string) {
			return n.Bridge.VLAN, []string{"bridge", "vlan", "allowed"}
		},
		describe: func(n *v1alpha1.Network) []string {
			b := []string{"bridge " + n.Bridge.Name}
			if n.Bridge.VLAN != nil {
				b = append(b, "vlans "+describeVLANs(n.Bridge.VLAN))
			}
			return append(b, describeSpan(n.Bridge)...)
		},
		defaults: func(n *v1alpha1.Network) { defaultSpan(n.Bridge) },
	},
	{
		kind: v1alpha1.KindMacvlan, field: "macvlan",
		set: func(n *v1alpha1.Network) bool { return n.Macvlan != nil },
		check: func(n *v1alpha1.Network) error {
			if err := checkLinkName("macvlan.master", n.Macvlan.Master); err != nil {
				return err
			}
			return checkMode("macvlan.mode", n.Macvlan.Mode, "bridge", "private", "vepa", "passthru")
		},
		approve: func(n *v1alpha1.Network, a *v1alpha1.ApprovedInterface) {
			a.Kind, a.Master, a.Mode = v1alpha1.KindMacvlan, n.Macvlan.Master, orDefault(n.Macvlan.Mode, DefaultMacvlanMode)
		},
		describe: func(n *v1alpha1.Network) []string { return []string{"macvlan on " + n.Macvlan.Master} },
		defaults: func(n *v1alpha1.Network) { n.Macvlan.Mode = orDefault(n.Macvlan.Mode, DefaultMacvlanMode) },
	},
	{
		kind: v1alpha1.KindIPVlan, field: "ipvlan",
		set: func(n *v1alpha1.Network) bool { return n.IPVlan != nil },
		check: func(n *v1alpha1.Network) error {
			if err := checkLinkName("ipvlan.master", n.IPVlan.Master); err != nil {
				return err
			}
			return checkMode("ipvlan.mode", n.IPVlan.Mode, "l2", "l3", "l3s")
		},
		approve: func(n *v1alpha1.Network, a *v1alpha1.ApprovedInterface) {
			a.Kind, a.Master, a.Mode = v1alpha1.KindIPVlan, n.IPVlan.Master, orDefault(n.IPVlan.Mode, DefaultIPVlanMode)
		},
		describe: func(n *v1alpha1.Network) []string { return []string{"ipvlan on " + n.IPVlan.Master} },
		defaults: func(n *v1alpha1.Network) { n.IPVlan.Mode = orDefault(n.IPVlan.Mode, DefaultIPVlanMode) },
	},
	{
		kind: v1alpha1.KindVLAN, field: "vlan",
		set:   func(n *v1alpha1.Network) bool { return n.VLAN != nil },
		check: func(n *v1alpha1.Network) error { return checkLinkName("vlan.master", n.VLAN.Master) },
		approve: func(n *v1alpha1.Network, a *v1alpha1.ApprovedInterface) {
			a.Kind, a.Master = v1alpha1.KindVLAN, n.VLAN.Master
		},
		vlans: func(n *v1alpha1.Network) (*v1alpha1.VLANPolicy, []string) {
			return &n.VLAN.VLAN, []string{"vlan", "vlan", "allowed"}
		},
		describe: func(n *v1alpha1.Network) []string {
			return []string{"vlan on " + n.VLAN.Master, "vlans " + describeVLANs(&n.VLAN.VLAN)}
		},
	},
	{
		kind: v1alpha1.KindHostDevice, field: "hostDevice",
		set: func(n *v1alpha1.Network) bool { return n.HostDevice != nil },
		check: func(n *v1alpha1.Network) error {
			return errors.Join(HostDeviceSelector(n.HostDevice).Validate("hostDevice")...)
		},
		approve: func(n *v1alpha1.Network, a *v1alpha1.ApprovedInterface) {
			h := n.HostDevice
			a.Kind = v1alpha1.KindHostDevice
			a.Devices = &v1alpha1.ApprovedDevices{Names: h.Names, Drivers: h.Drivers, PCIAddresses: h.PCIAddresses}
			if h.VF != nil {
				a.Devices.VF = &v1alpha1.ApprovedVF{SpoofCheck: vfSpoofCheck(h.VF), Trust: h.VF.Trust}
			}
		},
		vlans: func(n *v1alpha1.Network) (*v1alpha1.VLANPolicy, []string) {
			if n.HostDevice.VF == nil {
				return nil, nil
			}
			return n.HostDevice.VF.VLAN, []string{"hostDevice", "vf", "vlan", "allowed"}
		},
		describe: func(n *v1alpha1.Network) []string {
			d := []string{"host device " + HostDeviceSelector(n.HostDevice).String()}
			if vf := n.HostDevice.VF; vf != nil && vf.VLAN != nil {
				d = append(d, "vlans "+describeVLANs(vf.VLAN))
			}
			return d
		},
		defaults: func(n *v1alpha1.Network) {
			if vf := n.HostDevice.VF; vf != nil {
				check := vfSpoofCheck(vf)
				vf.SpoofCheck = &check
			}
		},
	},
	// The two kinds of a tunnel network: one API field, tunnel, and one
	// entry per kind of device it makes (tunnel.go).
	{
		kind: v1alpha1.KindWireGuard, field: "tunnel.wireguard",
		set:      func(n *v1alpha1.Network) bool { return n.Tunnel != nil && n.Tunnel.VXLAN == nil },
		check:    checkTunnel,
		approve:  approveTunnel(v1alpha1.KindWireGuard),
		describe: describeTunnel,
	},
	{
		kind: v1alpha1.KindVXLANTunnel, field: "tunnel.vxlan",
		set:      func(n *v1alpha1.Network) bool { return n.Tunnel != nil && n.Tunnel.VXLAN != nil },
		check:    checkTunnel,
		approve:  approveTunnel(v1alpha1.KindVXLANTunnel),
		describe: describeTunnel,
	},
}

// HostDeviceSelector is a hostDevice network's selector in the terms of
// pkg/hostdev, the rule the agent picks a NIC by: the one conversion the
// webhook, the carry labels and the DRA slices share.
func HostDeviceSelector(h *v1alpha1.HostDeviceNetwork) hostdev.Selector {
	return hostdev.Selector{Names: h.Names, Drivers: h.Drivers, PCIAddresses: h.PCIAddresses, VFs: h.VF != nil}
}

// vfSpoofCheck is a VF's spoof check, on unless the profile turns it
// off (the API's default, for objects written before it).
func vfSpoofCheck(vf *v1alpha1.VFPolicy) bool {
	return vf.SpoofCheck == nil || *vf.SpoofCheck
}

// KindField is the Network field that selects a kind ("tunnel" for both
// tunnel kinds), "" for an unknown kind.
func KindField(k v1alpha1.NetworkKind) string {
	for _, e := range networkKinds {
		if e.kind == k {
			f, _, _ := strings.Cut(e.field, ".")
			return f
		}
	}
	return ""
}

// kindOf is the network's kind entry, or an error when the network does not
// set exactly one kind.
func kindOf(n *v1alpha1.Network) (networkKind, error) {
	var found []networkKind
	fields := make([]string, len(networkKinds))
	for i, k := range networkKinds {
		fields[i] = k.field
		if k.set(n) {
			found = append(found, k)
		}
	}
	if len(found) != 1 {
		return networkKind{}, fmt.Errorf("sets %d of %s instead of exactly one", len(found), strings.Join(fields, ", "))
	}
	return found[0], nil
}

// NetworkKinds lists the kinds of network the API offers, so that a test
// can hold them against the kinds the dataplane makes.
func NetworkKinds() []v1alpha1.NetworkKind {
	out := make([]v1alpha1.NetworkKind, len(networkKinds))
	for i, k := range networkKinds {
		out[i] = k.kind
	}
	return out
}

// networkVLANs is the network's VLAN policy and its field path; nil when
// its kind has none or the network is broken.
func networkVLANs(n *v1alpha1.Network) (*v1alpha1.VLANPolicy, []string) {
	k, err := kindOf(n)
	if err != nil || k.vlans == nil {
		return nil, nil
	}
	return k.vlans(n)
}
