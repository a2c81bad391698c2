package dra

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
)

// Carries says whether this node can carry one network of one profile:
// only carried networks get devices in the node's ResourceSlices. It is
// the seam for a check of the node's capabilities (links, kernel
// modules); CarryAll is the default.
type Carries func(profile *v1alpha1.NetworkProfile, network *v1alpha1.Network) bool

// CarryAll carries every DRA-enabled network.
func CarryAll(*v1alpha1.NetworkProfile, *v1alpha1.Network) bool { return true }

// DeviceName is the name of the i-th device of a profile's network:
// "<network>-<8 hex digits of the profile name's SHA-256>-<i>", a DNS
// label of at most 32+1+8+1+3 characters. The profile's name may be
// longer than a label holds; its attribute names it whole.
func DeviceName(profile, network string, i int) string {
	sum := sha256.Sum256([]byte(profile))
	return network + "-" + hex.EncodeToString(sum[:4]) + "-" + strconv.Itoa(i)
}

// NodeDevices are the devices of every DRA-enabled network of profiles
// that carries says the node carries, in profile name and network order.
// A network whose devices cannot be published (a broken network, a
// profile name longer than an attribute holds, a name clash) is left
// out and named in the error; the others are still returned.
func NodeDevices(profiles []v1alpha1.NetworkProfile, carries Carries) ([]resourceapi.Device, error) {
	ordered := slices.Clone(profiles)
	slices.SortFunc(ordered, func(a, b v1alpha1.NetworkProfile) int { return strings.Compare(a.Name, b.Name) })
	var devices []resourceapi.Device
	var errs []error
	seen := map[string]string{} // device name prefix -> profile
	for i := range ordered {
		p := &ordered[i]
		for j := range p.Spec.Networks {
			n := &p.Spec.Networks[j]
			if n.DRA == nil || !carries(p, n) {
				continue
			}
			ds, err := networkDevices(p.Name, n)
			if err == nil {
				err = claimPrefix(seen, p.Name, n.Name)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("profile %q: %w", p.Name, err))
				continue
			}
			devices = append(devices, ds...)
		}
	}
	return devices, errors.Join(errs...)
}

// claimPrefix refuses a second network whose device names would equal an
// earlier one's (the same network name and profile hash).
func claimPrefix(seen map[string]string, profile, network string) error {
	prefix := DeviceName(profile, network, 0)
	if other, ok := seen[prefix]; ok && other != profile {
		return fmt.Errorf("network %q: its device names clash with those of profile %q", network, other)
	}
	seen[prefix] = profile
	return nil
}

// networkDevices are the devices of one DRA-enabled network: one per
// attachment, each carrying the attributes a DeviceClass selects on.
func networkDevices(profile string, n *v1alpha1.Network) ([]resourceapi.Device, error) {
	count := n.DRA.AttachmentsPerNode
	if count == 0 {
		count = v1alpha1.DefaultDRAAttachmentsPerNode
	}
	if count < 1 || count > v1alpha1.MaxDRAAttachmentsPerNode {
		return nil, fmt.Errorf("network %q: dra.attachmentsPerNode is %d, must be within 1-%d", n.Name, count, v1alpha1.MaxDRAAttachmentsPerNode)
	}
	if len(profile) > resourceapi.DeviceAttributeMaxValueLength {
		return nil, fmt.Errorf("network %q: the profile name is %d characters, a device attribute holds at most %d", n.Name, len(profile), resourceapi.DeviceAttributeMaxValueLength)
	}
	facts, err := policy.NetworkDeviceFacts(n)
	if err != nil {
		return nil, err
	}
	attrs := deviceAttributes(profile, n.Name, facts)
	out := make([]resourceapi.Device, count)
	for i := range out {
		out[i] = resourceapi.Device{Name: DeviceName(profile, n.Name, i), Attributes: maps.Clone(attrs)}
	}
	return out, nil
}

// deviceAttributes are the attributes of every device of one network,
// in the driver's domain (device.attributes["podnet.io"].network); nic
// and the VLAN bounds only when the network has them.
func deviceAttributes(profile, network string, f policy.DeviceFacts) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	str := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: ptr.To(s)} }
	num := func(v int32) resourceapi.DeviceAttribute {
		return resourceapi.DeviceAttribute{IntValue: ptr.To(int64(v))}
	}
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		v1alpha1.DeviceAttrProfile: str(profile),
		v1alpha1.DeviceAttrNetwork: str(network),
		v1alpha1.DeviceAttrKind:    str(string(f.Kind)),
		v1alpha1.DeviceAttrMTUMax:  num(f.MTUMax),
	}
	if f.NIC != "" {
		attrs[v1alpha1.DeviceAttrNIC] = str(f.NIC)
	}
	if f.VLANMax != 0 {
		attrs[v1alpha1.DeviceAttrVLANMin] = num(f.VLANMin)
		attrs[v1alpha1.DeviceAttrVLANMax] = num(f.VLANMax)
	}
	return attrs
}

// NodeResources puts devices into the node's one pool, named after the
// node, in slices of at most resourceapi.ResourceSliceMaxDevices each.
// No devices: one empty slice, so the pool (and that the node carries
// nothing) is still published.
func NodeResources(node string, devices []resourceapi.Device) resourceslice.DriverResources {
	var pool resourceslice.Pool
	for chunk := range slices.Chunk(devices, resourceapi.ResourceSliceMaxDevices) {
		pool.Slices = append(pool.Slices, resourceslice.Slice{Devices: chunk})
	}
	if len(pool.Slices) == 0 {
		pool.Slices = []resourceslice.Slice{{}}
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{node: pool}}
}
