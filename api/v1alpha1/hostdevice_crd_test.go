package v1alpha1_test

import (
	"strings"
	"testing"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// TestCRDHostDevice: a hostDevice network selects NICs by at least one of
// names, drivers and PCI addresses, each in its own shape; what would
// outlive the pod on the NIC (offloads, txqueuelen) or cannot apply to a
// whole NIC (port security, a MAC of podnet's) is refused; a VF may be
// given a MAC and VLANs.
func TestCRDHostDevice(t *testing.T) {
	env := testenv.Shared(t)
	names := &v1alpha1.HostDeviceNetwork{Names: []string{"ens3f*", "eth[2-3]"}}
	vfs := &v1alpha1.HostDeviceNetwork{Names: []string{"ens3f0"}, VF: &v1alpha1.VFPolicy{}}
	for _, tc := range []struct {
		name string
		n    v1alpha1.Network
		want string // "" = accepted
	}{
		{"names", v1alpha1.Network{HostDevice: names}, ""},
		{"drivers and pci", v1alpha1.Network{HostDevice: &v1alpha1.HostDeviceNetwork{Drivers: []string{"ixgbe"}, PCIAddresses: []string{"0000:3b:00.1"}}}, ""},
		{"nothing selected", v1alpha1.Network{HostDevice: &v1alpha1.HostDeviceNetwork{}}, "select NICs by at least one of names, drivers and pciAddresses"},
		{"pci shape", v1alpha1.Network{HostDevice: &v1alpha1.HostDeviceNetwork{PCIAddresses: []string{"3b:00.1"}}}, "pciAddresses[0]"},
		{"name shape", v1alpha1.Network{HostDevice: &v1alpha1.HostDeviceNetwork{Names: []string{"eth 1"}}}, "names[0]"},
		{"port security", v1alpha1.Network{HostDevice: names, PortSecurity: &v1alpha1.PortSecurityPolicy{}}, "portSecurity does not apply"},
		{"static mac", v1alpha1.Network{HostDevice: names, AllowStaticMAC: true}, "a NIC keeps its own MAC, so macRange and allowStaticMAC apply only to VFs"},
		{"offloads", v1alpha1.Network{HostDevice: names, Offloads: []string{"tx-checksum-ip-generic"}}, "may not offer offloads or txqueuelen"},
		{"txqueuelen", v1alpha1.Network{HostDevice: names, Settings: []v1alpha1.SettingRange{{Name: "txqueuelen", Min: 100, Max: 5000}}}, "may not offer offloads or txqueuelen"},
		{"settings of the netns", v1alpha1.Network{HostDevice: names, Settings: []v1alpha1.SettingRange{{Name: "arp_ignore", Min: 0, Max: 2}}}, ""},
		{"through dra", v1alpha1.Network{HostDevice: names, DRA: &v1alpha1.DRAOffer{}}, ""},
		{"with a bridge", v1alpha1.Network{HostDevice: names, Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-hd"}}, "exactly one of bridge, macvlan, ipvlan, vlan, tunnel, hostDevice"},
		{"vfs with a static mac", v1alpha1.Network{HostDevice: vfs, AllowStaticMAC: true}, ""},
		{"vfs with port security", v1alpha1.Network{HostDevice: vfs, PortSecurity: &v1alpha1.PortSecurityPolicy{}}, "portSecurity does not apply"},
		{"vfs with a vlan range", v1alpha1.Network{HostDevice: &v1alpha1.HostDeviceNetwork{Names: []string{"ens3f0"}, VF: &v1alpha1.VFPolicy{VLAN: &v1alpha1.VLANPolicy{Allowed: []string{"100-199"}}}}}, ""},
		{"vfs with a descending vlan range", v1alpha1.Network{HostDevice: &v1alpha1.HostDeviceNetwork{Names: []string{"ens3f0"}, VF: &v1alpha1.VFPolicy{VLAN: &v1alpha1.VLANPolicy{Allowed: []string{"199-100"}}}}}, "allowed VLANs must be IDs or ascending ranges"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.n
			n.Name = "n"
			requireNetworkVerdict(t, env, "hd-"+strings.ReplaceAll(tc.name, " ", "-"), n, tc.want)
		})
	}
}
