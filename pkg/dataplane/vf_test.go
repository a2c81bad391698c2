package dataplane

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"podnet.io/podnet/pkg/hostdev"
)

// TestSysfsVFs: a VF is found by its PCI address through the physfn and
// virtfn links the kernel makes, with its PF's netdev and driver; a PF,
// a NIC without SR-IOV and a NIC without a bus address are no VFs.
func TestSysfsVFs(t *testing.T) {
	root := t.TempDir()
	dev := func(pci string) string {
		d := filepath.Join(root, pci)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	link := func(target, name string) {
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	pf := dev("0000:3b:00.0")
	if err := os.MkdirAll(filepath.Join(pf, "net", "ens3f0"), 0o755); err != nil {
		t.Fatal(err)
	}
	link("../../../bus/pci/drivers/ice", filepath.Join(pf, "driver"))
	for i, vf := range []string{"0000:3b:01.0", "0000:3b:01.1", "0000:3b:01.2"} {
		d := dev(vf)
		link("../"+filepath.Base(pf), filepath.Join(d, "physfn"))
		link("../"+vf, filepath.Join(pf, "virtfn"+string(rune('0'+i))))
	}
	dev("0000:5e:00.0")
	lookup := SysfsVFs(root)

	got, index, ok := lookup(hostdev.NIC{Name: "ens3f0v2", PCI: "0000:3b:01.2"})
	want := hostdev.NIC{Name: "ens3f0", Driver: "ice", PCI: "0000:3b:00.0"}
	if !ok || index != 2 || got != want {
		t.Fatalf("VF 0000:3b:01.2: %+v, %d, %t; want %+v, 2, true", got, index, ok, want)
	}
	for _, nic := range []hostdev.NIC{{PCI: "0000:3b:00.0"}, {PCI: "0000:5e:00.0"}, {PCI: ""}, {PCI: "../0000:3b:01.2"}, {PCI: "0000:99:00.0"}} {
		if pf, i, ok := lookup(nic); ok {
			t.Errorf("%q: found as VF %d of %+v; want no VF", nic.PCI, i, pf)
		}
	}
}

// TestPlanVF: a VF is taken with its MAC and VLAN in the create step;
// settings on the PF that differ from the approval (another VLAN, spoof
// check off, another MAC) give it back and take the same VF anew; a VF
// of another PF is given back for one the selector selects.
func TestPlanVF(t *testing.T) {
	pf := hostdev.NIC{Name: "ens3f0", Driver: "ice"}
	otherPF := hostdev.NIC{Name: "ens4f0", Driver: "ice"}
	mac := net.HardwareAddr{0x02, 0, 0, 0, 0, 7}
	ifc := Interface{Name: "net1", Kind: KindHostDevice, Devices: &DeviceSelector{Names: []string{"ens3f0"}, VFs: true},
		VF: &VFSettings{SpoofCheck: true}, VLAN: 120, MAC: mac}
	p := Pod{UID: "u", NetNS: "/x", Interfaces: []Interface{ifc}}
	devices := []DeviceState{
		{Name: "ens3f0", MTU: 1500},
		{Name: "ens4f0v0", MTU: 1500, PF: &otherPF},
		{Name: "ens3f0v1", MTU: 1500, PF: &pf, VF: 1},
	}
	steps, err := Plan(p, State{Links: map[string]LinkState{}, Devices: devices})
	if err != nil || len(steps) == 0 || steps[0].Op != OpCreate || steps[0].Spec.Device != "ens3f0v1" ||
		steps[0].Spec.VLAN != 120 || steps[0].Spec.MAC.String() != mac.String() || *steps[0].Spec.VF != *ifc.VF {
		t.Fatalf("first plan: %v, %v; want create from ens3f0v1, the VF of ens3f0, with VLAN 120 and %s", steps, err, mac)
	}
	held := VFState{PF: pf, Index: 1, MAC: mac, VLAN: 120, SpoofCheck: true}
	taken := func(v *VFState) LinkState {
		return LinkState{Kind: KindHostDevice, Up: true, MTU: 1500, MAC: mac, Origin: &DeviceOrigin{Name: "ens3f0v1", MTU: 1500}, VF: v}
	}
	if steps, err := Plan(p, State{Links: map[string]LinkState{"net1": taken(&held)}}); err != nil || len(steps) != 0 {
		t.Fatalf("plan of a VF as approved: %v, %v", steps, err)
	}
	for name, v := range map[string]VFState{
		"another VLAN":    {PF: pf, Index: 1, MAC: mac, VLAN: 7, SpoofCheck: true},
		"spoof check off": {PF: pf, Index: 1, MAC: mac, VLAN: 120},
		"trusted":         {PF: pf, Index: 1, MAC: mac, VLAN: 120, SpoofCheck: true, Trust: true},
		"another MAC":     {PF: pf, Index: 1, MAC: net.HardwareAddr{0x02, 0, 0, 0, 0, 8}, VLAN: 120, SpoofCheck: true},
	} {
		steps, err := Plan(p, State{Links: map[string]LinkState{"net1": taken(&v)}})
		if err != nil || len(steps) < 2 || steps[0].Op != OpDelete || steps[1].Op != OpCreate || steps[1].Spec.Device != "ens3f0v1" {
			t.Errorf("%s on the PF: %v, %v; want ens3f0v1 given back and taken again", name, steps, err)
		}
	}
	// Settings that could not be read: no longer known as a VF of
	// ens3f0, so it is not kept; with no other free, the pod waits.
	_, err = Plan(p, State{Links: map[string]LinkState{"net1": taken(nil)}, Devices: devices[:2]})
	requireMentions(t, err, "no free host device", "VFs of names ens3f0")
}

// TestValidateVF: VF settings go with a selector of VFs; only a VF takes
// a MAC and a VLAN, within 0-4094.
func TestValidateVF(t *testing.T) {
	vfs := &DeviceSelector{Names: []string{"ens3f0"}, VFs: true}
	base := Interface{Name: "net1", Kind: KindHostDevice, Devices: vfs, VF: &VFSettings{}}
	for _, tc := range []struct {
		name string
		edit func(*Interface)
		want string
	}{
		{"a VF with MAC and VLAN", func(i *Interface) { i.MAC, i.VLAN = net.HardwareAddr{2, 0, 0, 0, 0, 1}, 4094 }, ""},
		{"VLAN out of range", func(i *Interface) { i.VLAN = 4095 }, "vlan 4095: must be between 0 (untagged) and 4094"},
		{"settings without a VF selector", func(i *Interface) { i.Devices = &DeviceSelector{Names: []string{"eth1"}} }, "vf: settings go with a selector of VFs"},
		{"a VF selector without settings", func(i *Interface) { i.VF = nil }, "vf: settings go with a selector of VFs"},
		{"a NIC with a MAC", func(i *Interface) {
			i.VF, i.Devices, i.MAC = nil, &DeviceSelector{Names: []string{"eth1"}}, net.HardwareAddr{2, 0, 0, 0, 0, 1}
		}, "mac: a host device keeps its own MAC"},
		{"a NIC with a VLAN", func(i *Interface) { i.VF, i.Devices, i.VLAN = nil, &DeviceSelector{Names: []string{"eth1"}}, 5 }, "vlan: not used by kind"},
		{"VF settings on a macvlan", func(i *Interface) { i.Kind, i.Devices, i.Master = KindMacvlan, nil, "eth1" }, "devices: not used by kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ifc := base
			tc.edit(&ifc)
			errs := validateKindFields(ifc)
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("errors %v; want none", errs)
				}
				return
			}
			requireMentions(t, errors.Join(errs...), tc.want)
		})
	}
}
