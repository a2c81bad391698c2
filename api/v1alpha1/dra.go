package v1alpha1

import (
	"fmt"
	"strings"
)

// The names below are the contract of podnet's Dynamic Resource Allocation
// driver between the controller (DeviceClasses), the agent (ResourceSlices,
// the kubelet plugin, claim status), the webhook (judging ResourceClaims)
// and the tests. A ResourceClaim's signed approval sits in the same
// annotations as a pod's (ApprovedAnnotation, ApprovedSignatureAnnotation).
const (
	// DRADriver is the name of podnet's DRA driver: the driver of every
	// device it publishes and of every opaque config it reads.
	DRADriver = "podnet.io"

	// DeviceAttrProfile, DeviceAttrNetwork, DeviceAttrKind, DeviceAttrNIC,
	// DeviceAttrMTUMax, DeviceAttrVLANMin and DeviceAttrVLANMax are the
	// attributes of a published device, in the DRADriver domain
	// (device.attributes["podnet.io"].network in a CEL selector). A
	// hostDevice network's device is one node NIC: nic is its name, and
	// nicDriver and pciAddress are its driver and bus address when it
	// has them; a VF's device also has pf, its PF's name, and vf, its
	// index there.
	DeviceAttrProfile    = "profile"
	DeviceAttrNetwork    = "network"
	DeviceAttrKind       = "kind"
	DeviceAttrNIC        = "nic"
	DeviceAttrMTUMax     = "mtuMax"
	DeviceAttrVLANMin    = "vlanMin"
	DeviceAttrVLANMax    = "vlanMax"
	DeviceAttrNICDriver  = "nicDriver"
	DeviceAttrPCIAddress = "pciAddress"
	DeviceAttrPF         = "pf"
	DeviceAttrVF         = "vf"

	// DeviceClassProfileLabel marks a DeviceClass the controller keeps for
	// a profile's network; its value is the profile's name. The controller
	// never changes or deletes a DeviceClass without it.
	DeviceClassProfileLabel = "podnet.io/profile"
)

// maxDeviceClassName is the longest object name the API server takes (a DNS
// subdomain).
const maxDeviceClassName = 253

// DeviceClassName is the name of the DeviceClass the controller keeps for
// one network of one profile: "<network>.<profile>". A network name is a DNS
// label without dots, so the first label is always the network.
func DeviceClassName(profile, network string) (string, error) {
	name := network + "." + profile
	if len(name) > maxDeviceClassName {
		return "", fmt.Errorf("device class for network %q of profile %q: name is %d characters, the limit is %d", network, profile, len(name), maxDeviceClassName)
	}
	return name, nil
}

// ParseDeviceClassName splits a DeviceClassName into its profile and
// network; ok is false for a name DeviceClassName cannot have made.
func ParseDeviceClassName(name string) (profile, network string, ok bool) {
	network, profile, ok = strings.Cut(name, ".")
	if !ok || network == "" || profile == "" {
		return "", "", false
	}
	return profile, network, true
}
