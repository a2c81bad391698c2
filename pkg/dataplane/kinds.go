package dataplane

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// kindSpec is everything the planner knows of one kind of interface: each
// kind has exactly one entry in kinds, and its netlink half in linuxKinds
// (kinds_linux.go). Adding a kind means adding one entry to each table.
type kindSpec struct {
	// bridgePort: the pod link is a veth whose node end is a port of a node
	// bridge (named by resolve).
	bridgePort bool
	// egressSecured: pods' links of the kind reach each other on their
	// parent without crossing a node bridge, so port security filters the
	// pod link's own egress, in the pod's netns (portsec_linux.go).
	egressSecured bool
	// parent: the link hangs off a node parent link (Interface.Master),
	// whose MTU is the default and the limit of the pod link's MTU.
	parent bool
	// adminBridge: Interface.Bridge names the node bridge; otherwise it
	// must be empty.
	adminBridge bool
	// modes are the allowed Interface.Mode values, the first the default;
	// none means that the kind has no mode.
	modes []string
	// modeInPlace says whether the kernel changes the mode of an existing
	// link from one to the other; otherwise the link is recreated.
	modeInPlace func(from, to string) bool
	// vlanMin and vlanMax bound Interface.VLAN; both 0 means no VLAN.
	vlanMin, vlanMax int
	// vlanMsg words the VLAN bounds in an error.
	vlanMsg string
	// spans: the network may span nodes through Interface.VXLAN or
	// Interface.Uplink.
	spans bool
	// vlanOnPort: Interface.VLAN is the PVID of the pod's port on a
	// vlan_filtering bridge; otherwise another link tags (or nothing).
	vlanOnPort bool
	// podKind is the kind observePod reports for the kind's pod link.
	podKind Kind
	// bridgeOf names the node bridge of a bridgePort kind.
	bridgeOf func(Interface) string
	// resolve fills in the node bridge, checks the node links the
	// interface needs and refuses what cannot be planned.
	resolve func(ifc Interface, s State) (Interface, error)
	// tunnel, for point-to-point tunnel kinds, is how their Tunnel is
	// checked, defaulted and changed (tunnel.go); nil for the others.
	tunnel *tunnelKind // devices: the pod link is a node NIC the interface's Devices
	// select (hostdevice.go).
	devices bool
}

// The modes of macvlan and ipvlan links, each list's first the kernel's
// default.
var (
	macvlanModes = []string{"bridge", "private", "vepa", "passthru"}
	ipvlanModes  = []string{"l2", "l3", "l3s"}
)

// kinds is the one home of every kind's facts on the planner's side.
var kinds = map[Kind]kindSpec{
	KindBridge: {
		bridgePort: true, adminBridge: true, podKind: KindBridge, vlanOnPort: true, spans: true,
		vlanMin: 0, vlanMax: maxVLAN, vlanMsg: "must be between 0 (untagged) and %d",
		bridgeOf: func(ifc Interface) string { return ifc.Bridge },
		resolve:  resolveBridge,
	},
	KindMacvlan: {
		parent: true, egressSecured: true, podKind: KindMacvlan,
		modes: macvlanModes,
		// The kernel changes macvlan modes in place, except to or from
		// passthru.
		modeInPlace: func(from, to string) bool { return from != "passthru" && to != "passthru" },
		resolve:     resolveParent,
	},
	KindIPVlan: {
		parent: true, egressSecured: true, podKind: KindIPVlan,
		modes: ipvlanModes,
		// The netlink library has no call to change an ipvlan's mode, and
		// the machines podnet is tested on have no ipvlan to prove a
		// hand-built one: recreate.
		modeInPlace: func(from, to string) bool { return false },
		resolve:     resolveParent,
	},
	KindVLAN: {
		bridgePort: true, parent: true, podKind: KindBridge,
		vlanMin: 1, vlanMax: maxVLAN, vlanMsg: "must be between 1 and %d",
		bridgeOf: func(ifc Interface) string { return vlanBridgeName(ifc.Master, ifc.VLAN) },
		resolve:  resolveVLAN,
	},
	KindWireGuard:   {podKind: KindWireGuard, tunnel: wireGuardTunnel, resolve: resolveTunnel(defaultWireGuardMTU)},
	KindVXLANTunnel: {podKind: KindVXLANTunnel, tunnel: vxlanTunnel, resolve: resolveTunnel(defaultVXLANMTU)},
	KindHostDevice:  {podKind: KindHostDevice, devices: true, resolve: resolveHostDevice},
}

// Kinds lists the kinds the dataplane makes, sorted.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// specOf returns the kind's entry; ok is false for an unknown kind.
func specOf(k Kind) (kindSpec, bool) {
	spec, ok := kinds[k]
	return spec, ok
}

// validateKindFields checks the fields whose meaning depends on the kind.
func validateKindFields(ifc Interface) []error {
	spec, ok := specOf(ifc.Kind)
	if !ok {
		names := make([]string, 0, len(kinds))
		for _, k := range Kinds() {
			names = append(names, string(k))
		}
		return []error{fmt.Errorf("kind %q: must be one of %s", ifc.Kind, strings.Join(names, ", "))}
	}
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format, args...))
	}
	if spec.adminBridge {
		if err := validateLinkName(ifc.Bridge); err != nil {
			add("bridge: %w", err)
		}
	} else if ifc.Bridge != "" {
		add("bridge: not used by kind %q", ifc.Kind)
	}
	if spec.parent {
		if err := validateLinkName(ifc.Master); err != nil {
			add("master: %w", err)
		}
	} else if ifc.Master != "" {
		add("master: not used by kind %q", ifc.Kind)
	}
	switch {
	case len(spec.modes) == 0 && ifc.Mode != "":
		add("mode: not used by kind %q", ifc.Kind)
	case ifc.Mode != "" && !slices.Contains(spec.modes, ifc.Mode):
		add("mode %q: must be one of %s", ifc.Mode, strings.Join(spec.modes, ", "))
	}
	vlanMin, vlanMax, vlanMsg := spec.vlanMin, spec.vlanMax, spec.vlanMsg
	if spec.devices && ifc.VF != nil {
		// A VF's VLAN is set on its PF.
		vlanMin, vlanMax, vlanMsg = 0, maxVLAN, "must be between 0 (untagged) and %d"
	}
	switch {
	case vlanMax == 0 && ifc.VLAN != 0:
		add("vlan: not used by kind %q", ifc.Kind)
	case vlanMax != 0 && (ifc.VLAN < vlanMin || ifc.VLAN > vlanMax):
		add("vlan %d: "+vlanMsg, ifc.VLAN, vlanMax)
	}
	switch {
	case spec.devices:
		errs = append(errs, validateDevices(ifc.Devices)...)
		if ifc.MAC != nil && ifc.VF == nil {
			add("mac: a host device keeps its own MAC (only a VF is given one)")
		}
		if ifc.Devices != nil && (ifc.VF != nil) != ifc.Devices.VFs {
			add("vf: settings go with a selector of VFs, and a selector of VFs with settings")
		}
	case ifc.Devices != nil || ifc.VF != nil:
		add("devices: not used by kind %q", ifc.Kind)
	}
	errs = append(errs, validateTunnel(ifc, spec)...)
	return append(errs, validateSpan(ifc)...)
}

// resolveBridge checks the node bridge an admin named, if it exists.
func resolveBridge(ifc Interface, s State) (Interface, error) {
	br, ok := s.NodeLinks[ifc.Bridge]
	if !ok {
		return ifc, nil
	}
	if !br.Bridge {
		return ifc, fmt.Errorf("node link %q is not a bridge", ifc.Bridge)
	}
	if ifc.VLAN > 0 && !br.VLANFiltering && !br.Owned {
		return ifc, fmt.Errorf("bridge %q does not filter VLANs and is not podnet's, so VLAN %d cannot be set", ifc.Bridge, ifc.VLAN)
	}
	if spans(ifc) && !br.Owned {
		return ifc, fmt.Errorf("bridge %q is not podnet's: a network spans nodes only through a bridge podnet creates", ifc.Bridge)
	}
	return ifc, nil
}

// resolveVLAN names the bridge a VLAN network's pods share, then checks the
// parent.
func resolveVLAN(ifc Interface, s State) (Interface, error) {
	ifc.Bridge = vlanBridgeName(ifc.Master, ifc.VLAN)
	if br, ok := s.NodeLinks[ifc.Bridge]; ok && (!br.Bridge || !br.Owned) {
		return ifc, fmt.Errorf("vlan %d on %q: node link %q, named as its bridge, is not a podnet bridge", ifc.VLAN, ifc.Master, ifc.Bridge)
	}
	return resolveParent(ifc, s)
}

// resolveParent checks that the parent exists and its MTU allows the link's.
func resolveParent(ifc Interface, s State) (Interface, error) {
	parent, ok := s.NodeLinks[ifc.Master]
	if !ok {
		return ifc, fmt.Errorf("parent link %q not found on the node", ifc.Master)
	}
	if ifc.MTU == 0 {
		ifc.MTU = parent.MTU
	}
	if ifc.MTU > parent.MTU {
		return ifc, fmt.Errorf("mtu %d: larger than parent %q's mtu %d", ifc.MTU, ifc.Master, parent.MTU)
	}
	return ifc, nil
}

// resolveKind applies the kind's defaults: its node bridge and parent
// checks, the MTU (the parent's, or the veth default) and the mode.
func resolveKind(ifc Interface, s State) (Interface, error) {
	spec, ok := specOf(ifc.Kind)
	if !ok {
		return ifc, errors.New("unknown kind")
	}
	ifc, err := spec.resolve(ifc, s)
	if err != nil {
		return ifc, err
	}
	if ifc.MTU == 0 {
		ifc.MTU = defaultVethMTU
	}
	if ifc.Mode == "" && len(spec.modes) > 0 {
		ifc.Mode = spec.modes[0]
	}
	return ifc, nil
}

// hasPort reports whether a kind's pod link is a veth whose node end is a
// port of a node bridge.
func hasPort(k Kind) bool {
	return kinds[k].bridgePort
}

// egressSecured says whether port security filters the kind's pod links'
// egress in the pod's netns.
func egressSecured(k Kind) bool {
	return kinds[k].egressSecured
}

// podKind is the kind of link the pod gets, as observePod reports it: a
// vlan kind interface is a veth, like a bridge kind one.
func podKind(k Kind) Kind {
	return kinds[k].podKind
}

// nodeBridge is the node bridge of an interface whose kind has one, "" for
// the others.
func nodeBridge(ifc Interface) string {
	if spec, ok := specOf(ifc.Kind); ok && spec.bridgeOf != nil {
		return spec.bridgeOf(ifc)
	}
	return ""
}
