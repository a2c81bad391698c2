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
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/hostdev"
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
	return devicePrefix(profile, network) + strconv.Itoa(i)
}

// devicePrefix starts every device name of a profile's network:
// "<network>-<8 hex digits of the profile name's SHA-256>-".
func devicePrefix(profile, network string) string {
	sum := sha256.Sum256([]byte(profile))
	return network + "-" + hex.EncodeToString(sum[:4]) + "-"
}

// HostDeviceName is the device a hostDevice network publishes for one
// of the node's free NICs: "<network>-<8 hex digits of the profile
// name's SHA-256>-<NIC name>". ok is false for a NIC whose name cannot
// be part of a device name (a DNS label: lower-case letters, digits and
// "-"); such a NIC is not offered through DRA.
func HostDeviceName(profile, network, nic string) (string, bool) {
	name := devicePrefix(profile, network) + nic
	return name, nic != "" && len(validation.IsDNS1123Label(name)) == 0
}

// AllocatedNIC is the node NIC a device made by HostDeviceName stands
// for; ok is false for a device name it cannot have made for that
// network.
func AllocatedNIC(profile, network, device string) (string, bool) {
	nic, ok := strings.CutPrefix(device, devicePrefix(profile, network))
	if !ok {
		return "", false
	}
	if _, valid := HostDeviceName(profile, network, nic); !valid {
		return "", false
	}
	return nic, true
}

// NodeDevices are the devices of every DRA-enabled network of profiles
// that carries says the node carries, in profile name and network order:
// a hostDevice network's are the node's free NICs (nics) it selects, the
// others' one per attachment. A network whose devices cannot be
// published (a broken network, a profile name longer than an attribute
// holds, a name clash) is left out and named in the error; the others
// are still returned.
func NodeDevices(profiles []v1alpha1.NetworkProfile, carries Carries, nics []hostdev.NIC) ([]resourceapi.Device, error) {
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
			// A network's devices may be partly published (a hostDevice
			// network's NICs whose names fit): ds holds those.
			ds, err := networkDevices(p.Name, n, nics)
			if clash := claimPrefix(seen, p.Name, n.Name); clash != nil {
				ds, err = nil, clash
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("profile %q: %w", p.Name, err))
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
// attachment, or a hostDevice network's one per free NIC it selects,
// each carrying the attributes a DeviceClass selects on.
func networkDevices(profile string, n *v1alpha1.Network, nics []hostdev.NIC) ([]resourceapi.Device, error) {
	count := n.DRA.AttachmentsPerNode
	if count == 0 {
		count = v1alpha1.DefaultDRAAttachmentsPerNode
	}
	if n.HostDevice == nil && (count < 1 || count > v1alpha1.MaxDRAAttachmentsPerNode) {
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
	if n.HostDevice != nil {
		return nicDevices(profile, n, nics, attrs)
	}
	out := make([]resourceapi.Device, count)
	for i := range out {
		out[i] = resourceapi.Device{Name: DeviceName(profile, n.Name, i), Attributes: maps.Clone(attrs)}
	}
	return out, nil
}

// nicDevices are a hostDevice network's devices: one per free node NIC
// its selector matches (the agent's own rule, pkg/hostdev), with the
// NIC's name, driver and PCI address as attributes. A NIC taken by a pod
// is not free, so it leaves the slice until it is given back. A NIC
// whose name cannot be a device name is left out and named in the error.
func nicDevices(profile string, n *v1alpha1.Network, nics []hostdev.NIC, attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) ([]resourceapi.Device, error) {
	sel := policy.HostDeviceSelector(n.HostDevice)
	var out []resourceapi.Device
	var errs []error
	for _, nic := range nics {
		if !sel.Matches(nic) {
			continue
		}
		name, ok := HostDeviceName(profile, n.Name, nic.Name)
		if !ok {
			errs = append(errs, fmt.Errorf("network %q: NIC %q is not offered through DRA: a device name is a DNS label, and %q is not one", n.Name, nic.Name, name))
			continue
		}
		a := maps.Clone(attrs)
		a[v1alpha1.DeviceAttrNIC] = resourceapi.DeviceAttribute{StringValue: ptr.To(nic.Name)}
		if nic.Driver != "" {
			a[v1alpha1.DeviceAttrNICDriver] = resourceapi.DeviceAttribute{StringValue: ptr.To(nic.Driver)}
		}
		if nic.PCI != "" {
			a[v1alpha1.DeviceAttrPCIAddress] = resourceapi.DeviceAttribute{StringValue: ptr.To(nic.PCI)}
		}
		if nic.PF != nil {
			a[v1alpha1.DeviceAttrPF] = resourceapi.DeviceAttribute{StringValue: ptr.To(nic.PF.Name)}
			a[v1alpha1.DeviceAttrVF] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(nic.VF))}
		}
		out = append(out, resourceapi.Device{Name: name, Attributes: a})
	}
	return out, errors.Join(errs...)
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
