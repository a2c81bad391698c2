package dataplane

import (
	"net"
	"reflect"
	"testing"
)

func TestOriginAltNameRoundTrip(t *testing.T) {
	for _, o := range []DeviceOrigin{
		{Name: "eth1", MTU: 1500, Up: true},
		{Name: "ens3f0.100", MTU: 9000},
		{Name: "a.b.c", MTU: 68, Up: true},
	} {
		got, ok := parseOrigin(originAltName(o))
		if !ok || got != o {
			t.Errorf("parseOrigin(originAltName(%+v)) = %+v, %t", o, got, ok)
		}
		if n := len(originAltName(o)); n >= 128 {
			t.Errorf("%+v: alternative name of %d bytes, the kernel takes at most 127", o, n)
		}
	}
	for _, alt := range []string{"eth1", "podnet.origin.", "podnet.origin.eth1", "podnet.origin.eth1.x.up", "podnet.origin.eth1.1500.sideways", "podnet.origin..1500.up", "podnet.origin.eth1.0.up"} {
		if o, ok := parseOrigin(alt); ok {
			t.Errorf("parseOrigin(%q) = %+v, want no origin", alt, o)
		}
	}
}

func TestPickDevices(t *testing.T) {
	sel := func(names ...string) *DeviceSelector { return &DeviceSelector{Names: names} }
	devices := []DeviceState{
		{Name: "eth0", Busy: "carries addresses", Driver: "e1000"},
		{Name: "eth1", Driver: "e1000", PCI: "0000:00:04.0"},
		{Name: "eth2", Driver: "ixgbe", PCI: "0000:3b:00.1"},
		{Name: "eth3", Driver: "ixgbe", PCI: "0000:3b:00.2"},
	}
	hd := func(name string, s *DeviceSelector) Interface {
		return Interface{Name: name, Kind: KindHostDevice, Devices: s}
	}
	allocated := func(name string, s *DeviceSelector, nic string) Interface {
		ifc := hd(name, s)
		ifc.Allocated = nic
		return ifc
	}
	for _, tc := range []struct {
		name string
		ifcs []Interface
		want map[string]string
	}{
		{"first free by name", []Interface{hd("net1", sel("eth*"))}, map[string]string{"net1": "eth1"}},
		{"each interface its own", []Interface{hd("net1", sel("eth*")), hd("net2", sel("eth*"))}, map[string]string{"net1": "eth1", "net2": "eth2"}},
		{"busy never", []Interface{hd("net1", sel("eth0"))}, map[string]string{}},
		{"by driver", []Interface{hd("net1", &DeviceSelector{Drivers: []string{"ixgbe"}})}, map[string]string{"net1": "eth2"}},
		{"by PCI address", []Interface{hd("net1", &DeviceSelector{PCIAddresses: []string{"0000:3b:00.2"}})}, map[string]string{"net1": "eth3"}},
		{"every list must match", []Interface{hd("net1", &DeviceSelector{Names: []string{"eth1"}, Drivers: []string{"ixgbe"}})}, map[string]string{}},
		{"none left", []Interface{hd("net1", sel("eth3")), hd("net2", sel("eth3"))}, map[string]string{"net1": "eth3"}},
		{"other kinds pick nothing", []Interface{{Name: "net1", Kind: KindMacvlan}}, map[string]string{}},
		{"the allocated one, not the first", []Interface{allocated("net1", sel("eth*"), "eth3")}, map[string]string{"net1": "eth3"}},
		{"allocated but busy", []Interface{allocated("net1", sel("eth*"), "eth0")}, map[string]string{}},
		{"allocated but not selected", []Interface{allocated("net1", sel("eth1"), "eth2")}, map[string]string{}},
		{"allocated but gone", []Interface{allocated("net1", sel("eth*"), "eth9")}, map[string]string{}},
		{"allocated to an earlier interface", []Interface{hd("net1", sel("eth3")), allocated("net2", sel("eth*"), "eth3")}, map[string]string{"net1": "eth3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pickDevices(tc.ifcs, State{Devices: devices}); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("pickDevices = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPlanHostDevice: a host device is taken by the one create step, keeps
// its NIC while the selector still selects it, and is given back (a
// delete) and another taken once it does not.
func TestPlanHostDevice(t *testing.T) {
	ifc := Interface{Name: "net1", Kind: KindHostDevice, Devices: &DeviceSelector{Names: []string{"eth*"}},
		Addresses: []net.IPNet{{IP: net.IPv4(10, 0, 0, 1).To4(), Mask: net.CIDRMask(24, 32)}}}
	p := Pod{UID: "u", NetNS: "/x", Interfaces: []Interface{ifc}}
	s := State{Links: map[string]LinkState{}, Devices: []DeviceState{{Name: "eth1", MTU: 9000}, {Name: "eth2", MTU: 1500}}}
	steps, err := Plan(p, s)
	if err != nil || len(steps) != 3 || steps[0].Op != OpCreate || steps[0].Spec.Device != "eth1" || steps[0].Spec.MTU != 9000 || steps[0].Node != "eth1" {
		t.Fatalf("first plan: %v, %v; want create from eth1 with its MTU, an address, up", steps, err)
	}
	taken := LinkState{Kind: KindHostDevice, Up: true, MTU: 9000, Origin: &DeviceOrigin{Name: "eth1", MTU: 9000},
		Addresses: ifc.Addresses}
	s = State{Links: map[string]LinkState{"net1": taken}}
	if steps, err := Plan(p, s); err != nil || len(steps) != 0 {
		t.Fatalf("plan of a pod as desired: %v, %v", steps, err)
	}
	// A link left unfinished (its check on the wire failed) is made anew
	// from the NIC it holds, which is on no node list meanwhile.
	unfinished := taken
	unfinished.Unfinished = true
	steps, err = Plan(p, State{Links: map[string]LinkState{"net1": unfinished}})
	if err != nil || len(steps) < 2 || steps[0].Op != OpDelete || steps[1].Op != OpCreate || steps[1].Spec.Device != "eth1" || steps[1].Spec.MTU != 9000 {
		t.Fatalf("plan of an unfinished host device: %v, %v; want eth1 given back and taken again, MTU 9000", steps, err)
	}
	p.Interfaces[0].Devices = &DeviceSelector{Names: []string{"eth2"}}
	s.Devices = []DeviceState{{Name: "eth2", MTU: 1500}}
	steps, err = Plan(p, s)
	if err != nil || len(steps) < 2 || steps[0].Op != OpDelete || steps[1].Op != OpCreate || steps[1].Spec.Device != "eth2" {
		t.Fatalf("plan once eth1 is no longer selected: %v, %v; want eth1 given back and eth2 taken", steps, err)
	}
	s.Devices = nil
	_, err = Plan(p, s)
	requireMentions(t, err, `interface "net1"`, "no free host device: no node NIC matches names eth2")
}

// TestPlanAllocatedHostDevice: an interface whose NIC was allocated
// through DRA takes that NIC, keeps it while it is the allocated one, and
// waits, naming it, while it is not free.
func TestPlanAllocatedHostDevice(t *testing.T) {
	ifc := Interface{Name: "net1", Kind: KindHostDevice, Devices: &DeviceSelector{Names: []string{"eth*"}}, Allocated: "eth2"}
	p := Pod{UID: "u", NetNS: "/x", Interfaces: []Interface{ifc}}
	s := State{Links: map[string]LinkState{}, Devices: []DeviceState{{Name: "eth1", MTU: 9000}, {Name: "eth2", MTU: 1500}}}
	steps, err := Plan(p, s)
	if err != nil || len(steps) == 0 || steps[0].Op != OpCreate || steps[0].Spec.Device != "eth2" {
		t.Fatalf("first plan: %v, %v; want create from eth2, the allocated NIC", steps, err)
	}
	taken := LinkState{Kind: KindHostDevice, Up: true, MTU: 1500, Origin: &DeviceOrigin{Name: "eth2", MTU: 1500}}
	s = State{Links: map[string]LinkState{"net1": taken}}
	if steps, err := Plan(p, s); err != nil || len(steps) != 0 {
		t.Fatalf("plan of a pod as desired: %v, %v", steps, err)
	}
	// Another allocation (a claim prepared again): the NIC in the pod
	// goes back and the allocated one, busy, is waited for.
	p.Interfaces[0].Allocated = "eth1"
	s.Devices = []DeviceState{{Name: "eth1", Busy: "carries addresses"}, {Name: "eth3"}}
	_, err = Plan(p, s)
	requireMentions(t, err, `interface "net1"`, `node NIC "eth1", allocated to it`, "eth1 (carries addresses)")
}
