package dataplane

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"podnet.io/podnet/pkg/hostdev"
)

// vfLookup is the Dataplane's way of finding a VF's PF.
func (d *Dataplane) vfLookup() VFLookup {
	if d.VFs != nil {
		return d.VFs
	}
	return SysfsVFs(DefaultPCIDevices)
}

// vfOf finds the PF of the node link name, with its driver and bus
// address read in netns ns; ok is false for a link that is no VF.
func (d *Dataplane) vfOf(ns netns.NsHandle, name string) (pf hostdev.NIC, index int, ok bool) {
	et, err := openEthtool(ns)
	if err != nil {
		return hostdev.NIC{}, 0, false
	}
	defer et.close()
	driver, pci, _ := et.drvInfo(name)
	return d.vfLookup()(hostdev.NIC{Name: name, Driver: driver, PCI: pci})
}

// readVF reads the settings the PF holds for its VF index.
func readVF(h *netlink.Handle, pf hostdev.NIC, index int) (*VFState, error) {
	l, err := h.LinkByName(pf.Name)
	if err != nil {
		return nil, fmt.Errorf("PF %q: %w", pf.Name, err)
	}
	for _, vf := range l.Attrs().Vfs {
		if vf.ID == index {
			return &VFState{PF: pf, Index: index, MAC: vf.Mac, VLAN: vf.Vlan, SpoofCheck: vf.Spoofchk, Trust: vf.Trust != 0}, nil
		}
	}
	return nil, fmt.Errorf("PF %q has no VF %d", pf.Name, index)
}

// configureVF sets a VF's MAC (when the interface has one), VLAN, spoof
// check and trust on its PF.
func configureVF(h *netlink.Handle, pf hostdev.NIC, index int, mac net.HardwareAddr, vlan int, set VFSettings) error {
	l, err := h.LinkByName(pf.Name)
	if err != nil {
		return fmt.Errorf("PF %q: %w", pf.Name, err)
	}
	if mac != nil {
		if err := h.LinkSetVfHardwareAddr(l, index, mac); err != nil {
			return fmt.Errorf("PF %q VF %d: set MAC %s: %w", pf.Name, index, mac, err)
		}
	}
	if err := h.LinkSetVfVlan(l, index, vlan); err != nil {
		return fmt.Errorf("PF %q VF %d: set VLAN %d: %w", pf.Name, index, vlan, err)
	}
	if err := h.LinkSetVfSpoofchk(l, index, set.SpoofCheck); err != nil {
		return fmt.Errorf("PF %q VF %d: set spoof check %s: %w", pf.Name, index, onOff(set.SpoofCheck), err)
	}
	if err := h.LinkSetVfTrust(l, index, set.Trust); err != nil {
		return fmt.Errorf("PF %q VF %d: set trust %s: %w", pf.Name, index, onOff(set.Trust), err)
	}
	return nil
}

// resetVF gives a VF back to the node with nothing of its pod on the
// PF: no MAC, untagged, spoof check on, not trusted.
func resetVF(h *netlink.Handle, pf hostdev.NIC, index int) error {
	err := configureVF(h, pf, index, nil, 0, VFSettings{SpoofCheck: true})
	if err != nil {
		return err
	}
	l, err := h.LinkByName(pf.Name)
	if err != nil {
		return fmt.Errorf("PF %q: %w", pf.Name, err)
	}
	if err := h.LinkSetVfHardwareAddr(l, index, make(net.HardwareAddr, 6)); err != nil {
		return fmt.Errorf("PF %q VF %d: clear its MAC: %w", pf.Name, index, err)
	}
	return nil
}

// takeVF sets the PF side of a VF the interface is taking; a link that
// is no VF is refused, since only a VF selector gives settings.
func (s *session) takeVF(ifc Interface) error {
	pf, index, ok := s.d.vfOf(s.hostNS, ifc.Device)
	if !ok {
		return fmt.Errorf("node NIC %q: not an SR-IOV VF", ifc.Device)
	}
	if err := configureVF(s.host, pf, index, ifc.MAC, ifc.VLAN, *ifc.VF); err != nil {
		return errors.Join(fmt.Errorf("node NIC %q: %w", ifc.Device, err), resetVF(s.host, pf, index))
	}
	return nil
}

// resetVFOf resets the VF settings of the node link name on its PF; a
// link that is no VF has none.
func (d *Dataplane) resetVFOf(h *netlink.Handle, ns netns.NsHandle, name string) error {
	pf, index, ok := d.vfOf(ns, name)
	if !ok {
		return nil
	}
	if err := resetVF(h, pf, index); err != nil {
		return fmt.Errorf("node NIC %q: %w", name, err)
	}
	return nil
}
