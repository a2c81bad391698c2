package dataplane

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// A host device interface is a node NIC moved whole into the pod, renamed
// to the interface's name. Which NIC is chosen on the node, from the free
// ones that the interface's DeviceSelector matches (pickDevices): the
// admin names NICs, never a tenant. What the NIC was on the node (name,
// MTU, up or down) travels with it as an alternative name (originAltName),
// so that it goes back the same when the pod leaves, when the grant is
// revoked, or when the node finds it stranded after the pod's netns went
// without podnet (a physical NIC then comes back as dev<ifindex>).

// DeviceSelector selects node NICs. A NIC matches when it matches every
// list that is not empty, and a list when it matches one of its entries.
type DeviceSelector struct {
	// Names are shell patterns (path.Match) of node link names.
	Names []string
	// Drivers are kernel driver names, as ethtool reports them.
	Drivers []string
	// PCIAddresses are bus addresses, e.g. 0000:3b:00.1, as ethtool
	// reports them.
	PCIAddresses []string
}

// DeviceState is a node link that a host device interface could take.
type DeviceState struct {
	Name   string
	MTU    int
	Up     bool
	Driver string
	PCI    string
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
		return []error{errors.New("devices: a host device interface must select node NICs")}
	}
	if len(sel.Names)+len(sel.Drivers)+len(sel.PCIAddresses) == 0 {
		return []error{errors.New("devices: select by at least one of names, drivers and PCI addresses")}
	}
	var errs []error
	for _, p := range sel.Names {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			errs = append(errs, fmt.Errorf("devices.names: %q is not a shell pattern", p))
		}
	}
	return errs
}

// matches reports whether the selector selects the device.
func (sel DeviceSelector) matches(d DeviceState) bool {
	if len(sel.Names) > 0 && !slices.ContainsFunc(sel.Names, func(p string) bool {
		ok, _ := path.Match(p, d.Name)
		return ok
	}) {
		return false
	}
	if len(sel.Drivers) > 0 && !slices.Contains(sel.Drivers, d.Driver) {
		return false
	}
	return len(sel.PCIAddresses) == 0 || slices.Contains(sel.PCIAddresses, d.PCI)
}

// wantsDevice says whether the interface is a host device that needs a
// NIC picked: it has no link in the pod yet, or one to be given back (left
// unfinished, of another kind, or a NIC its selector no longer selects).
func wantsDevice(ifc Interface, s State) bool {
	if ifc.Kind != KindHostDevice {
		return false
	}
	cur, exists := s.Links[ifc.Name]
	return !exists || cur.Unfinished || !deviceStillSelected(ifc, cur)
}

// pickDevices gives each host device interface that needs a NIC the
// first free one, by name, that its selector matches and no earlier
// interface took. An interface with none left gets no entry.
func pickDevices(ifcs []Interface, s State) map[string]string {
	picked := map[string]string{}
	taken := map[string]bool{}
	for _, ifc := range ifcs {
		if !wantsDevice(ifc, s) || ifc.Devices == nil {
			continue
		}
		for _, d := range s.Devices {
			if d.Busy == "" && !taken[d.Name] && ifc.Devices.matches(d) {
				picked[ifc.Name], taken[d.Name] = d.Name, true
				break
			}
		}
	}
	return picked
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
		return ifc, noFreeDevice(*ifc.Devices, s.Devices)
	}
	ifc.Device = name
	if ifc.MTU == 0 {
		for _, d := range s.Devices {
			if d.Name == name {
				ifc.MTU = d.MTU
			}
		}
	}
	return ifc, nil
}

// noFreeDevice says why no NIC could be picked: none matches, or each
// that matches is busy or taken.
func noFreeDevice(sel DeviceSelector, devices []DeviceState) error {
	var busy []string
	for _, d := range devices {
		if sel.matches(d) {
			why := d.Busy
			if why == "" {
				why = "taken by another interface of this pod"
			}
			busy = append(busy, d.Name+" ("+why+")")
		}
	}
	if len(busy) == 0 {
		return fmt.Errorf("no free host device: no node NIC matches %s", sel)
	}
	return fmt.Errorf("no free host device: the node NICs that match %s are not free: %s", sel, strings.Join(busy, ", "))
}

func (sel DeviceSelector) String() string {
	var parts []string
	if len(sel.Names) > 0 {
		parts = append(parts, "names "+strings.Join(sel.Names, ","))
	}
	if len(sel.Drivers) > 0 {
		parts = append(parts, "drivers "+strings.Join(sel.Drivers, ","))
	}
	if len(sel.PCIAddresses) > 0 {
		parts = append(parts, "pci "+strings.Join(sel.PCIAddresses, ","))
	}
	return strings.Join(parts, " and ")
}

// deviceStillSelected says whether a host device in the pod is still one
// the interface's selector matches; one that is not goes back and another
// is taken. Only what the pod link still shows is compared: the name it
// had on the node, its driver and bus address.
func deviceStillSelected(ifc Interface, cur LinkState) bool {
	if ifc.Devices == nil || cur.Origin == nil {
		return false
	}
	return ifc.Devices.matches(DeviceState{Name: cur.Origin.Name, Driver: cur.Driver, PCI: cur.PCI})
}
