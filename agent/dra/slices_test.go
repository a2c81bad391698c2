package dra

import (
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/hostdev"
)

func draProfile(name string, nets ...v1alpha1.Network) v1alpha1.NetworkProfile {
	return v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NetworkProfileSpec{Networks: nets}}
}

func vlanNet(name string, n int32) v1alpha1.Network {
	return v1alpha1.Network{Name: name, MTU: &v1alpha1.MTURange{Max: ptr.To[int32](9000)},
		VLAN: &v1alpha1.VLANNetwork{Master: "eth1", VLAN: v1alpha1.VLANPolicy{Allowed: []string{"100-199"}}},
		DRA:  &v1alpha1.DRAOffer{AttachmentsPerNode: n}}
}

func bridgeNet(name string, dra *v1alpha1.DRAOffer) v1alpha1.Network {
	return v1alpha1.Network{Name: name, Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-" + name}, DRA: dra}
}

func TestNodeDevicesAttributes(t *testing.T) {
	devs, err := NodeDevices([]v1alpha1.NetworkProfile{
		draProfile("telco", vlanNet("data", 2), bridgeNet("plain", nil)),
	}, CarryAll, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 2 {
		t.Fatalf("%d devices, want 2 (the network without dra has none)", len(devs))
	}
	a := devs[1].Attributes
	for k, want := range map[resourceapi.QualifiedName]string{
		v1alpha1.DeviceAttrProfile: "telco", v1alpha1.DeviceAttrNetwork: "data",
		v1alpha1.DeviceAttrKind: "vlan", v1alpha1.DeviceAttrNIC: "eth1",
	} {
		if got := ptr.Deref(a[k].StringValue, "<none>"); got != want {
			t.Errorf("attribute %s = %q, want %q", k, got, want)
		}
	}
	for k, want := range map[resourceapi.QualifiedName]int64{
		v1alpha1.DeviceAttrMTUMax: 9000, v1alpha1.DeviceAttrVLANMin: 100, v1alpha1.DeviceAttrVLANMax: 199,
	} {
		if got := ptr.Deref(a[k].IntValue, -1); got != want {
			t.Errorf("attribute %s = %d, want %d", k, got, want)
		}
	}
	if devs[0].Name == devs[1].Name {
		t.Errorf("two devices named %s", devs[0].Name)
	}
}

func TestNodeDevicesDefaultCountAndOptionalAttributes(t *testing.T) {
	devs, err := NodeDevices([]v1alpha1.NetworkProfile{draProfile("p", bridgeNet("br", &v1alpha1.DRAOffer{}))}, CarryAll, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != v1alpha1.DefaultDRAAttachmentsPerNode {
		t.Fatalf("%d devices, want the default %d", len(devs), v1alpha1.DefaultDRAAttachmentsPerNode)
	}
	for _, k := range []resourceapi.QualifiedName{v1alpha1.DeviceAttrNIC, v1alpha1.DeviceAttrVLANMin, v1alpha1.DeviceAttrVLANMax} {
		if _, ok := devs[0].Attributes[k]; ok {
			t.Errorf("a node-local bridge without VLANs has attribute %s", k)
		}
	}
}

// The seam: only networks the node carries get devices.
func TestNodeDevicesOnlyCarried(t *testing.T) {
	carries := func(p *v1alpha1.NetworkProfile, n *v1alpha1.Network) bool { return n.Name != "far" }
	devs, err := NodeDevices([]v1alpha1.NetworkProfile{draProfile("p", vlanNet("near", 1), vlanNet("far", 1))}, carries, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 1 || *devs[0].Attributes[v1alpha1.DeviceAttrNetwork].StringValue != "near" {
		t.Errorf("devices %+v, want one of network near", devs)
	}
}

// A network that cannot be published is named and left out; the others
// are still published.
func TestNodeDevicesLeavesOutBadNetworks(t *testing.T) {
	long := strings.Repeat("p", 65)
	devs, err := NodeDevices([]v1alpha1.NetworkProfile{
		draProfile("a", vlanNet("big", 129), vlanNet("ok", 1)),
		draProfile(long, vlanNet("data", 1)),
	}, CarryAll, nil)
	for _, want := range []string{
		`profile "a": network "big": dra.attachmentsPerNode is 129, must be within 1-128`,
		`profile "` + long + `": network "data": the profile name is 65 characters, a device attribute holds at most 64`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to say %q", err, want)
		}
	}
	if len(devs) != 1 {
		t.Errorf("%d devices, want the one of network ok", len(devs))
	}
}

func TestDeviceNamesAreDNSLabels(t *testing.T) {
	profile := strings.Repeat("x", 253)
	network := strings.Repeat("n", 32)
	name := DeviceName(profile, network, v1alpha1.MaxDRAAttachmentsPerNode-1)
	if errs := validation.IsDNS1123Label(name); len(errs) != 0 {
		t.Errorf("device name %q: %v", name, errs)
	}
	if DeviceName("a-b", "c", 0) == DeviceName("a", "b-c", 0) {
		t.Error("profiles a-b and a share device names")
	}
}

// A node's devices go into one pool named after the node, in slices of at
// most ResourceSliceMaxDevices each.
func TestNodeResourcesSplitsSlices(t *testing.T) {
	var profiles []v1alpha1.NetworkProfile
	for _, n := range []string{"a", "b", "c"} {
		profiles = append(profiles, draProfile("p-"+n, vlanNet(n, 128)))
	}
	devs, err := NodeDevices(profiles, CarryAll, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := NodeResources("node-1", append(devs, devs[0]))
	pool, ok := res.Pools["node-1"]
	if !ok || len(res.Pools) != 1 {
		t.Fatalf("pools %v, want one named node-1", res.Pools)
	}
	var sizes []int
	for _, s := range pool.Slices {
		sizes = append(sizes, len(s.Devices))
	}
	if want := []int{128, 128, 128, 1}; len(sizes) != 4 || sizes[0] != want[0] || sizes[3] != want[3] {
		t.Errorf("slice sizes %v, want %v", sizes, want)
	}
	if empty := NodeResources("node-1", nil).Pools["node-1"]; len(empty.Slices) != 1 || len(empty.Slices[0].Devices) != 0 {
		t.Errorf("no devices: slices %+v, want one empty slice", empty.Slices)
	}
}

// A hostDevice network offered through DRA publishes one device per free
// node NIC its selector matches, named after the NIC and read back to it;
// a NIC whose name cannot be a device name is left out and named.
func TestNodeDevicesHostDevice(t *testing.T) {
	n := v1alpha1.Network{Name: "fast", HostDevice: &v1alpha1.HostDeviceNetwork{Names: []string{"ens*", "Ens*"}, Drivers: []string{"ixgbe"}},
		DRA: &v1alpha1.DRAOffer{AttachmentsPerNode: v1alpha1.DefaultDRAAttachmentsPerNode}}
	nics := []hostdev.NIC{
		{Name: "ens1f0", Driver: "ixgbe", PCI: "0000:3b:00.0"},
		{Name: "ens1f1", Driver: "i40e", PCI: "0000:3b:00.1"},
		{Name: "ens2", Driver: "ixgbe"},
		{Name: "Ens_3", Driver: "ixgbe"},
		{Name: "eth1", Driver: "ixgbe"},
	}
	devs, err := NodeDevices([]v1alpha1.NetworkProfile{draProfile("telco", n)}, CarryAll, nics)
	if err == nil || !strings.Contains(err.Error(), `NIC "Ens_3" is not offered through DRA`) {
		t.Errorf("error %v, want it to name Ens_3", err)
	}
	if len(devs) != 2 {
		t.Fatalf("%d devices (%v), want 2 (ens1f0 and ens2: ens1f1 has another driver, eth1 another name)", len(devs), err)
	}
	for i, want := range []hostdev.NIC{nics[0], nics[2]} {
		d := devs[i]
		if nic, ok := AllocatedNIC("telco", "fast", d.Name); !ok || nic != want.Name {
			t.Errorf("device %s reads back as NIC %q, %t; want %q", d.Name, nic, ok, want.Name)
		}
		if msgs := validation.IsDNS1123Label(d.Name); len(msgs) > 0 {
			t.Errorf("device name %q: %v", d.Name, msgs)
		}
		for k, v := range map[resourceapi.QualifiedName]string{v1alpha1.DeviceAttrNIC: want.Name, v1alpha1.DeviceAttrNICDriver: want.Driver, v1alpha1.DeviceAttrKind: "host-device"} {
			if got := ptr.Deref(d.Attributes[k].StringValue, "<none>"); got != v {
				t.Errorf("device %s: attribute %s = %q, want %q", d.Name, k, got, v)
			}
		}
	}
	if got := ptr.Deref(devs[0].Attributes[v1alpha1.DeviceAttrPCIAddress].StringValue, ""); got != "0000:3b:00.0" {
		t.Errorf("pciAddress = %q", got)
	}
	if _, ok := devs[1].Attributes[v1alpha1.DeviceAttrPCIAddress]; ok {
		t.Errorf("a NIC without a bus address has attribute pciAddress")
	}
	for _, bad := range []string{DeviceName("other", "fast", 0), "fast", hostDeviceNameOf(t, "telco", "slow", "ens2")} {
		if nic, ok := AllocatedNIC("telco", "fast", bad); ok {
			t.Errorf("AllocatedNIC(%q) = %q, want none", bad, nic)
		}
	}
}

func hostDeviceNameOf(t *testing.T, profile, network, nic string) string {
	t.Helper()
	name, ok := HostDeviceName(profile, network, nic)
	if !ok {
		t.Fatalf("HostDeviceName(%q, %q, %q) refused", profile, network, nic)
	}
	return name
}

// TestNodeDevicesVFs: a hostDevice network of VFs publishes one device
// per free VF of a selected PF, with the PF's name and the VF's index as
// attributes, and never the PF itself.
func TestNodeDevicesVFs(t *testing.T) {
	n := v1alpha1.Network{Name: "mid", HostDevice: &v1alpha1.HostDeviceNetwork{Names: []string{"ens3f0"}, VF: &v1alpha1.VFPolicy{}},
		DRA: &v1alpha1.DRAOffer{AttachmentsPerNode: v1alpha1.DefaultDRAAttachmentsPerNode}}
	pf := hostdev.NIC{Name: "ens3f0", Driver: "ice", PCI: "0000:3b:00.0"}
	nics := []hostdev.NIC{
		pf,
		{Name: "ens3f0v3", Driver: "iavf", PCI: "0000:3b:01.3", PF: &pf, VF: 3},
		{Name: "ens4f0v0", Driver: "iavf", PCI: "0000:5e:01.0", PF: &hostdev.NIC{Name: "ens4f0"}},
	}
	devs, err := NodeDevices([]v1alpha1.NetworkProfile{draProfile("telco", n)}, CarryAll, nics)
	if err != nil || len(devs) != 1 {
		t.Fatalf("devices %v, %v; want one, VF 3 of ens3f0", devs, err)
	}
	a := devs[0].Attributes
	if nic, _ := AllocatedNIC("telco", "mid", devs[0].Name); nic != "ens3f0v3" || ptr.Deref(a[v1alpha1.DeviceAttrPF].StringValue, "") != "ens3f0" || ptr.Deref(a[v1alpha1.DeviceAttrVF].IntValue, -1) != 3 {
		t.Fatalf("device %s: NIC %q, attributes %v; want ens3f0v3 with pf ens3f0 and vf 3", devs[0].Name, nic, a)
	}
}
