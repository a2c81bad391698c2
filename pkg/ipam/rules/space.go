package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"podnet.io/podnet/api/v1alpha1"
)

// SpaceName names the address space of an approved interface: the
// layer-2 domain whose pods must never share an address, and within which
// a namespace's quota counts. The webhook signs it into the approval
// (ApprovedIPAM.AddressSpace) and the agent derives it again for approvals
// issued before it was signed; both call this one function.
//
//   - A bridge network's space is its bridge name ("pnbr-data.bridge").
//     A node-local bridge is a separate segment on each node, but it is
//     treated as one space across the cluster: the admin may span it by
//     VXLAN or an uplink later without changing its name, and addresses
//     handed out before must not collide then. The VNI is not part of it
//     either: one bridge carries one VNI (a VNI on two bridges is refused),
//     and every port of one bridge on a node is one segment whatever spans
//     it.
//   - A macvlan, ipvlan or vlan network's space is its master link
//     ("eth1.link"): the wire behind that link.
//   - A tunnel network's space is the network, by name ("tn" and 13 hex
//     digits of its SHA-256, ".tunnel"): every pod's tunnel is a link of
//     its own, but their far ends may share one remote network.
//   - A host-device network's space is the network, by name ("hd" and 13
//     hex digits of its SHA-256, ".nic"): each pod has a NIC of its own,
//     but the NICs one selector picks are cabled to one wire.
//
// A VLAN never splits a space: it is chosen by the tenant within the
// admin's range, and a quota must not grow with what the tenant chooses.
// Two profiles naming the same bridge (or master) share one space, and so
// one set of addresses and one quota per namespace, whatever their network
// names; two bridges never share one, even with the same pool.
//
// The result is a label value (at most 22 characters, alphanumeric at
// both ends), empty for an interface of an unknown kind.
func SpaceName(ai v1alpha1.ApprovedInterface) string {
	switch ai.Kind {
	case v1alpha1.KindBridge:
		return fmt.Sprintf("%s.bridge", ai.Bridge)
	case v1alpha1.KindMacvlan, v1alpha1.KindIPVlan, v1alpha1.KindVLAN:
		return fmt.Sprintf("%s.link", ai.Master)
	case v1alpha1.KindWireGuard, v1alpha1.KindVXLANTunnel:
		sum := sha256.Sum256([]byte(ai.Network))
		return "tn" + hex.EncodeToString(sum[:])[:13] + ".tunnel"
	case v1alpha1.KindHostDevice:
		sum := sha256.Sum256([]byte(ai.Network))
		return "hd" + hex.EncodeToString(sum[:])[:13] + ".nic"
	}
	return ""
}
