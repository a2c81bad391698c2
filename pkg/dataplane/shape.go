package dataplane

// Shape is what a kind builds, as plain facts read from its entry in kinds,
// so that what the API tells admins about a kind (the CRD's descriptions,
// which `kubectl explain` prints) can be held against what the dataplane
// does.
type Shape struct {
	// PodLink is the type of the link inside the pod: "veth", "macvlan",
	// "ipvlan", "wireguard" or "vxlan", or "node's NICs" for a NIC moved
	// whole.
	PodLink string
	// NodeBridge: the pod link is a veth whose node end is a port of a
	// bridge on the node.
	NodeBridge bool
	// Parent: the kind hangs off a parent link of the node (the network's
	// master).
	Parent bool
	// SharedSubinterface: the pods of a node share one 802.1Q subinterface
	// of the parent per VLAN id, the uplink of the bridge their veths are
	// ports of.
	SharedSubinterface bool
	// Tunnel: the pod link is a point-to-point tunnel device whose UDP
	// socket stays on the node.
	Tunnel bool
}

// ShapeOf returns the shape of kind k; ok is false for an unknown kind.
func ShapeOf(k Kind) (s Shape, ok bool) {
	spec, ok := specOf(k)
	if !ok {
		return Shape{}, false
	}
	s = Shape{PodLink: string(spec.podKind), NodeBridge: spec.bridgePort, Parent: spec.parent}
	if spec.tunnel != nil {
		s.PodLink, s.Tunnel = spec.tunnel.podLink, true
	}
	if spec.devices {
		s.PodLink = "node's nics"
	}
	if spec.bridgePort {
		s.PodLink = "veth"
		// A bridge-port kind with a parent has its bridge named per parent
		// and VLAN (resolveVLAN), whose uplink is the parent's subinterface
		// for that VLAN (joinVLAN): one per node, whatever the pods.
		s.SharedSubinterface = spec.parent
	}
	return s, true
}
