package dataplane

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"podnet.io/podnet/pkg/hostdev"
)

// An SR-IOV virtual function is a host device like any NIC: picked,
// moved, given back by the same code (hostdevice.go). What a VF adds is
// its settings on its physical function (MAC, VLAN, spoof check, trust),
// which the node sets before the move and resets when the VF comes back.
// The PF holds them, so a pod without NET_ADMIN on the PF, which stays on
// the node, cannot change them. A pod link whose VF settings on the PF
// differ from the interface's is given back and taken anew: an untrusted
// VF may not be changed from the pod's side.

// VFSettings is what a VF interface is given on its PF beside the
// interface's MAC and VLAN.
type VFSettings struct {
	SpoofCheck bool
	Trust      bool
}

// VFState is a VF's configuration as its PF holds it.
type VFState struct {
	PF         hostdev.NIC
	Index      int
	MAC        net.HardwareAddr
	VLAN       int
	SpoofCheck bool
	Trust      bool
}

// VFLookup finds the PF of an SR-IOV virtual function, and the VF's index
// on it; ok is false for any other NIC.
type VFLookup func(nic hostdev.NIC) (pf hostdev.NIC, index int, ok bool)

// DefaultPCIDevices is where the kernel lists PCI devices.
const DefaultPCIDevices = "/sys/bus/pci/devices"

// SysfsVFs finds VFs the way the kernel shows them under root (a
// /sys/bus/pci/devices): a VF's physfn link names its PF's device, whose
// virtfn<i> links name its VFs, whose net directory holds the PF's
// netdev and whose driver link its driver. A NIC is found by its PCI
// address, which does not change when it moves to a pod's netns.
func SysfsVFs(root string) VFLookup {
	return func(nic hostdev.NIC) (hostdev.NIC, int, bool) {
		// The bus address comes from the kernel (ethtool), but it is
		// still a path component here.
		if nic.PCI == "" || nic.PCI == "." || nic.PCI == ".." || strings.Contains(nic.PCI, "/") {
			return hostdev.NIC{}, 0, false
		}
		pfPath, err := filepath.EvalSymlinks(filepath.Join(root, nic.PCI, "physfn"))
		if err != nil {
			return hostdev.NIC{}, 0, false
		}
		pf := hostdev.NIC{PCI: filepath.Base(pfPath)}
		if d, err := os.Readlink(filepath.Join(root, pf.PCI, "driver")); err == nil {
			pf.Driver = filepath.Base(d)
		}
		if ents, err := os.ReadDir(filepath.Join(root, pf.PCI, "net")); err == nil && len(ents) > 0 {
			pf.Name = ents[0].Name()
		}
		fns, _ := filepath.Glob(filepath.Join(root, pf.PCI, "virtfn*"))
		for _, fn := range fns {
			index, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(fn), "virtfn"))
			if err != nil {
				continue
			}
			if target, err := os.Readlink(fn); err == nil && filepath.Base(target) == nic.PCI {
				return pf, index, pf.Name != ""
			}
		}
		return hostdev.NIC{}, 0, false
	}
}

// vfDrifted says whether a VF in the pod holds other settings on its PF
// than the interface wants. A VF whose settings could not be read is not
// judged here: it no longer matches a VF selector, so it goes back anyway
// (deviceStillSelected).
func vfDrifted(ifc Interface, cur LinkState) bool {
	if ifc.VF == nil || cur.VF == nil {
		return false
	}
	v := cur.VF
	return v.VLAN != ifc.VLAN || v.SpoofCheck != ifc.VF.SpoofCheck || v.Trust != ifc.VF.Trust ||
		(ifc.MAC != nil && !bytes.Equal(v.MAC, ifc.MAC))
}

// pfOf is the PF of a host device in the pod, nil when it is no VF.
func pfOf(cur LinkState) *hostdev.NIC {
	if cur.VF == nil {
		return nil
	}
	return &cur.VF.PF
}
