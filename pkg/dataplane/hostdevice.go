package dataplane

import (
	"fmt"
	"strconv"
	"strings"

	"podnet.io/podnet/pkg/hostdev"
)

// A host device interface is a node NIC moved whole into the pod, renamed
// to the interface's name. Which NIC is chosen on the node, from the free
// ones that the interface's DeviceSelector matches (pickDevices): the
// admin names NICs, never a tenant. What the NIC was on the node (name,
// MTU, up or down) travels with it as an alternative name (originAltName),
// so that it goes back the same when the pod leaves, when the grant is
// revoked, or when the node finds it stranded after the pod's netns went
// without podnet (a physical NIC then comes back as dev<ifindex>).

// DeviceSelector selects node NICs (pkg/hostdev: the one rule the
// webhook, the placement labels and the agent share).
type DeviceSelector = hostdev.Selector

// DeviceState is a node link that a host device interface could take.
type DeviceState struct {
	Name   string
	MTU    int
	Up     bool
	Driver string
	PCI    string
	// PF is the physical function of a NIC that is an SR-IOV VF, and VF
	// its index there; nil for any other NIC.
	PF *hostdev.NIC
	VF int
	// Busy says why the link can never be taken although it may match:
	// it carries addresses, is a port or parent of another link, or is
	// podnet's own. "" means free.
	Busy string
}

// DeviceOrigin is what a host device was on the node before podnet took
// it.
type DeviceOrigin struct {
	Name string
	MTU  int
	Up   bool
}

// originPrefix starts the alternative name that records a taken device's
// origin. An alternative name, unlike the alias, moves with the device
// between network namespaces untouched, whatever the pod's alias says,
// and allows no ":" or "/", hence the dots.
const originPrefix = "podnet.origin."

// originAltName records o as one alternative name.
func originAltName(o DeviceOrigin) string {
	state := "down"
	if o.Up {
		state = "up"
	}
	return originPrefix + o.Name + "." + strconv.Itoa(o.MTU) + "." + state
}

// parseOrigin reads an alternative name made by originAltName. The
// device's own name may hold dots (eth0.100), so it is read from the
// right.
func parseOrigin(alt string) (DeviceOrigin, bool) {
	rest, ok := strings.CutPrefix(alt, originPrefix)
	if !ok {
		return DeviceOrigin{}, false
	}
	i := strings.LastIndexByte(rest, '.')
	if i < 0 {
		return DeviceOrigin{}, false
	}
	state := rest[i+1:]
	rest = rest[:i]
	j := strings.LastIndexByte(rest, '.')
	if j <= 0 || (state != "up" && state != "down") {
		return DeviceOrigin{}, false
	}
	mtu, err := strconv.Atoi(rest[j+1:])
	if err != nil || mtu <= 0 {
		return DeviceOrigin{}, false
	}
	return DeviceOrigin{Name: rest[:j], MTU: mtu, Up: state == "up"}, true
}

// originOf finds the origin among a link's alternative names.
func originOf(altNames []string) (DeviceOrigin, bool) {
	for _, alt := range altNames {
		if o, ok := parseOrigin(alt); ok {
			return o, true
		}
	}
	return DeviceOrigin{}, false
}

// validateDevices checks a selector: at least one list, valid patterns.
func validateDevices(sel *DeviceSelector) []error {
	if sel == nil {
		return []error{fmt.Errorf("devices: %w", hostdev.ErrNoSelector)}
	}
	return sel.Validate("devices")
}

// matches reports whether the selector selects the device.
func matches(sel DeviceSelector, d DeviceState) bool {
	return sel.Matches(hostdev.NIC{Name: d.Name, Driver: d.Driver, PCI: d.PCI, PF: d.PF, VF: d.VF})
}

// wantsDevice says whether the interface is a host device that needs a
// NIC picked: it has no link in the pod yet, or one to be given back (left
// unfinished, of another kind, or a NIC its selector no longer selects).
func wantsDevice(ifc Interface, s State) bool {
	if ifc.Kind != KindHostDevice {
		return false
	}
	cur, exists := s.Links[ifc.Name]
	return !exists || cur.Unfinished || !deviceStillSelected(ifc, cur) || vfDrifted(ifc, cur)
}

// pickDevices gives each host device interface that needs a NIC the
// first free one, by name, that its selector matches and no earlier
// interface took; an interface with an Allocated NIC gets that one only.
// An interface with none left gets no entry.
func pickDevices(ifcs []Interface, s State) map[string]string {
	picked := map[string]string{}
	taken := map[string]bool{}
	for _, ifc := range ifcs {
		if !wantsDevice(ifc, s) || ifc.Devices == nil {
			continue
		}
		// A link made anew (left unfinished, or failed its check on the
		// wire) takes back the NIC it holds, if that is still selected:
		// the plan gives it back to the node before it takes it again.
		if cur, ok := s.Links[ifc.Name]; ok && deviceStillSelected(ifc, cur) && !taken[cur.Origin.Name] {
			picked[ifc.Name], taken[cur.Origin.Name] = cur.Origin.Name, true
			continue
		}
		for _, d := range s.Devices {
			if takeable(ifc, d) && !taken[d.Name] {
				picked[ifc.Name], taken[d.Name] = d.Name, true
				break
			}
		}
	}
	return picked
}

// takeable says whether the interface may take the node NIC: it is free,
// the selector matches it, and it is the allocated one if there is one.
func takeable(ifc Interface, d DeviceState) bool {
	return d.Busy == "" && (ifc.Allocated == "" || d.Name == ifc.Allocated) && matches(*ifc.Devices, d)
}

// resolveHostDevice names the NIC a new interface takes and defaults the
// MTU to the NIC's own; an interface already in the pod keeps its NIC,
// and defaults to the MTU it had on the node.
func resolveHostDevice(ifc Interface, s State) (Interface, error) {
	if cur, ok := s.Links[ifc.Name]; ok && !wantsDevice(ifc, s) {
		if ifc.MTU == 0 {
			ifc.MTU = cur.Origin.MTU
		}
		return ifc, nil
	}
	name, ok := s.Picked[ifc.Name]
	if !ok {
		return ifc, noFreeDevice(ifc, s.Devices)
	}
	ifc.Device = name
	if ifc.MTU == 0 {
		for _, d := range s.Devices {
			if d.Name == name {
				ifc.MTU = d.MTU
			}
		}
		if cur, ok := s.Links[ifc.Name]; ok && cur.Origin != nil && cur.Origin.Name == name {
			ifc.MTU = cur.Origin.MTU
		}
	}
	return ifc, nil
}

// NoFreeDeviceError: no node NIC the interface's selector matches is
// free (or the one allocated to it is not). Busy names each that
// matches, with why it is not.
type NoFreeDeviceError struct {
	Selector  DeviceSelector
	Allocated string
	Busy      []string
}

func (e *NoFreeDeviceError) Error() string {
	switch {
	case e.Allocated != "" && len(e.Busy) == 0:
		return fmt.Sprintf("no free host device: node NIC %q, allocated to it, is not on the node or does not match %s", e.Allocated, e.Selector)
	case e.Allocated != "":
		return fmt.Sprintf("no free host device: node NIC %q, allocated to it, is not free: %s", e.Allocated, strings.Join(e.Busy, ", "))
	case len(e.Busy) == 0:
		return fmt.Sprintf("no free host device: no node NIC matches %s", e.Selector)
	}
	return fmt.Sprintf("no free host device: the node NICs that match %s are not free: %s", e.Selector, strings.Join(e.Busy, ", "))
}

// noFreeDevice says why no NIC could be picked: none matches (or the
// allocated one is not on the node, or does not match), or each that
// matches is busy or taken.
func noFreeDevice(ifc Interface, devices []DeviceState) error {
	sel := *ifc.Devices
	e := &NoFreeDeviceError{Selector: sel, Allocated: ifc.Allocated}
	for _, d := range devices {
		if ifc.Allocated != "" && d.Name != ifc.Allocated {
			continue
		}
		if matches(sel, d) {
			why := d.Busy
			if why == "" {
				why = "taken by another interface of this pod"
			}
			e.Busy = append(e.Busy, d.Name+" ("+why+")")
		}
	}
	return e
}

// deviceStillSelected says whether a host device in the pod is still one
// the interface's selector matches; one that is not goes back and another
// is taken. Only what the pod link still shows is compared: the name it
// had on the node, its driver and bus address.
func deviceStillSelected(ifc Interface, cur LinkState) bool {
	if ifc.Devices == nil || cur.Origin == nil || (ifc.Allocated != "" && cur.Origin.Name != ifc.Allocated) {
		return false
	}
	return matches(*ifc.Devices, DeviceState{Name: cur.Origin.Name, Driver: cur.Driver, PCI: cur.PCI, PF: pfOf(cur)})
}
