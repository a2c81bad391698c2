package dataplane

import (
	"net"
	"slices"
	"strings"
	"testing"
)

const testUID = "0b7c6c3e-5a55-4a8e-9d7a-3f0c1d2e4b5a"

func mustCIDR(s string) net.IPNet {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	n.IP = ip
	return *n
}

func mustNet(s string) net.IPNet {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	return *n
}

func mustMAC(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// simulate performs steps on a State the way the kernel would, so a test
// can check that planning the result gives no further steps.
func simulate(uid string, s State, steps []Step) State {
	s = cloneState(s)
	nextIndex := 1000
	for _, st := range steps {
		host := hostName(uid, st.Interface)
		switch st.Op {
		case OpDelete:
			if s.Links[st.Interface].Kind == KindBridge {
				delete(s.Ports, host)
			}
			delete(s.Links, st.Interface)
		case OpDeletePort:
			delete(s.Ports, st.Node)
		case OpCreate:
			ifc := st.Spec
			ls := LinkState{Kind: podKind(ifc.Kind), MTU: ifc.MTU, MAC: ifc.MAC, Mode: ifc.Mode}
			if ls.MAC == nil {
				ls.MAC = mustMAC("02:00:00:00:00:01")
			}
			switch {
			case hasPort(ifc.Kind):
				s.Ports[host] = PortState{MTU: ifc.MTU, Alias: portAlias(uid, ifc.Name)}
			case ifc.Kind == KindVXLANTunnel:
				t := ifc.Tunnel
				ls.Tunnel = &TunnelState{Remote: t.Remote, VNI: t.VNI, Local: t.Local, DevIndex: s.NodeLinks[t.Dev].Index}
			case ifc.Kind == KindWireGuard:
				ls.Tunnel = &TunnelState{}
			default:
				ls.ParentIndex = s.NodeLinks[ifc.Master].Index
			}
			s.Links[ifc.Name] = ls
		case OpAttachPort:
			br, ok := s.NodeLinks[st.Spec.Bridge]
			if !ok {
				nextIndex++
				br = NodeLinkState{Index: nextIndex, MTU: 1500, Bridge: true, Owned: true, VLANFiltering: st.VLANFiltering}
				s.NodeLinks[st.Spec.Bridge] = br
			}
			port := s.Ports[st.Node]
			port.Master, port.PVID, port.VIDs = st.Spec.Bridge, 0, nil
			if br.VLANFiltering {
				port.PVID, port.VIDs = defaultPVID, []int{defaultPVID}
			}
			s.Ports[st.Node] = port
		case OpEnableVLANFiltering:
			br := s.NodeLinks[st.Node]
			br.VLANFiltering = true
			s.NodeLinks[st.Node] = br
			for name, port := range s.Ports {
				if port.Master == st.Node {
					port.PVID, port.VIDs = defaultPVID, []int{defaultPVID}
					s.Ports[name] = port
				}
			}
		case OpSetVLAN:
			port := s.Ports[st.Node]
			if !slices.Contains(port.VIDs, st.VLAN) {
				port.VIDs = append(slices.Clone(port.VIDs), st.VLAN)
			}
			port.PVID = st.VLAN
			port.VIDs = slices.DeleteFunc(port.VIDs, func(v int) bool { return slices.Contains(st.RemoveVLANs, v) })
			s.Ports[st.Node] = port
		case OpSetPortMTU, OpSetPortAlias, OpPortUp:
			port := s.Ports[st.Node]
			switch st.Op {
			case OpSetPortMTU:
				port.MTU = st.MTU
			case OpSetPortAlias:
				port.Alias = portAlias(uid, st.Interface)
			default:
				port.Up = true
			}
			s.Ports[st.Node] = port
		case OpSetPrimaryMTU:
			s.PrimaryMTU = st.MTU
		case OpCreateVRF, OpVRFUp, OpDeleteVRF, OpSetVRF:
			s = simulateVRF(s, st)
		case OpDeleteBridgeIfUnused:
			used := false
			for _, port := range s.Ports {
				used = used || port.Master == st.Node
			}
			if !used && s.NodeLinks[st.Node].Owned {
				delete(s.NodeLinks, st.Node)
			}
		default:
			ls := s.Links[st.Interface]
			switch st.Op {
			case OpSetMTU:
				ls.MTU = st.MTU
			case OpSetMAC:
				ls.MAC = st.MAC
			case OpSetMode:
				ls.Mode = st.Mode
			case OpUp:
				ls.Up = true
			case OpAddAddress:
				ls.Addresses = append(slices.Clone(ls.Addresses), st.Address)
			case OpDelAddress:
				ls.Addresses = slices.DeleteFunc(slices.Clone(ls.Addresses), func(a net.IPNet) bool { return a.String() == st.Address.String() })
			case OpAddRoute:
				ls.Routes = append(slices.Clone(ls.Routes), st.Route)
			case OpConfigureTunnel:
				t := st.Spec.Tunnel
				pub := "pod-key"
				if ls.Tunnel != nil && ls.Tunnel.PublicKey != "" {
					pub = ls.Tunnel.PublicKey
				}
				ls.Tunnel = &TunnelState{Remote: t.Remote, PeerPublicKey: t.PeerPublicKey, AllowedIPs: t.AllowedIPs, PublicKey: pub}
			case OpDelRoute:
				k, _ := routeKey(st.Route)
				ls.Routes = slices.DeleteFunc(slices.Clone(ls.Routes), func(r Route) bool { rk, _ := routeKey(r); return rk == k })
			default:
				panic("simulate: unknown op " + string(st.Op))
			}
			s.Links[st.Interface] = ls
		}
	}
	return s
}

func cloneState(s State) State {
	out := State{Links: map[string]LinkState{}, Foreign: map[string]bool{}, PrimaryMTU: s.PrimaryMTU, Ports: map[string]PortState{}, NodeLinks: map[string]NodeLinkState{}}
	for k, v := range s.Links {
		out.Links[k] = v
	}
	for k, v := range s.Foreign {
		out.Foreign[k] = v
	}
	for k, v := range s.Ports {
		out.Ports[k] = v
	}
	for k, v := range s.NodeLinks {
		out.NodeLinks[k] = v
	}
	out.VRFs = map[string]VRFState{}
	for k, v := range s.VRFs {
		out.VRFs[k] = v
	}
	return out
}

// node is a State with an eth0, a NIC eth1 (MTU 9000) and an admin bridge.
func node() State {
	return State{
		Links: map[string]LinkState{}, Foreign: map[string]bool{"lo": true, "eth0": true}, PrimaryMTU: 1500,
		Ports: map[string]PortState{},
		NodeLinks: map[string]NodeLinkState{
			"eth1":     {Index: 2, MTU: 9000},
			"admin-br": {Index: 3, MTU: 1500, Bridge: true},
		},
	}
}

func bridgeNet() Interface {
	return Interface{
		Name: "net1", Kind: KindBridge, Bridge: "pnbr-a", MTU: 9000,
		Addresses: []net.IPNet{mustCIDR("192.168.1.5/24"), mustCIDR("fd00::5/64")},
		Routes:    []Route{{Dst: mustNet("10.0.0.0/8"), Gateway: net.ParseIP("192.168.1.1")}},
	}
}

func pod(ifcs ...Interface) Pod {
	return Pod{UID: testUID, NetNS: "/run/netns/x", Interfaces: ifcs}
}

// converged applies the plan in simulation and returns the state; it fails
// the test when planning again finds anything left to do.
func converged(t *testing.T, p Pod, s State) State {
	t.Helper()
	steps, _ := Plan(p, s)
	after := simulate(p.UID, s, steps)
	again, err := Plan(p, after)
	if len(again) != 0 {
		t.Fatalf("plan does not converge: second plan %v (first %v, err %v)", again, steps, err)
	}
	return after
}

func ops(steps []Step) string {
	var out []string
	for _, s := range steps {
		out = append(out, string(s.Op)+" "+s.Interface+s.Node)
	}
	return strings.Join(out, ", ")
}

func TestPlanCreate(t *testing.T) {
	p := pod(bridgeNet())
	steps, err := Plan(p, node())
	if err != nil {
		t.Fatal(err)
	}
	host := hostName(testUID, "net1")
	want := "create net1" + host + ", attach-port net1" + host + ", port-up net1" + host +
		", add-address net1, add-address net1, up net1, add-route net1"
	if got := ops(steps); got != want {
		t.Fatalf("steps:\n got %s\nwant %s", got, want)
	}
	after := converged(t, p, node())
	if !after.NodeLinks["pnbr-a"].Owned {
		t.Fatal("the new bridge is not podnet's")
	}
}

func TestPlanInPlaceChanges(t *testing.T) {
	base := converged(t, pod(bridgeNet()), node())
	cases := []struct {
		name   string
		change func(*Interface)
		want   string
	}{
		{"mtu", func(i *Interface) { i.MTU = 1400 }, "set-port-mtu, set-mtu"},
		{"mac", func(i *Interface) { i.MAC = mustMAC("02:aa:00:00:00:01") }, "set-mac"},
		{"addresses", func(i *Interface) { i.Addresses = []net.IPNet{mustCIDR("192.168.1.6/24")} },
			"del-address, del-address, add-address"},
		{"routes", func(i *Interface) {
			i.Routes = []Route{{Dst: mustNet("10.0.0.0/8"), Gateway: net.ParseIP("192.168.1.2")}}
		},
			"del-route, add-route"},
		{"bridge", func(i *Interface) { i.Bridge = "admin-br" }, "attach-port, delete-bridge-if-unused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ifc := bridgeNet()
			c.change(&ifc)
			p := pod(ifc)
			steps, err := Plan(p, base)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range steps {
				if s.Op == OpCreate || s.Op == OpDelete {
					t.Fatalf("in-place change planned as %s", ops(steps))
				}
				got = append(got, string(s.Op))
			}
			if strings.Join(got, ", ") != c.want {
				t.Fatalf("got %s, want %s", strings.Join(got, ", "), c.want)
			}
			converged(t, p, base)
		})
	}
}

func TestPlanNoChangeNoSteps(t *testing.T) {
	mv := Interface{Name: "net2", Kind: KindMacvlan, Master: "eth1", Addresses: []net.IPNet{mustCIDR("10.1.1.1/16")}}
	p := pod(bridgeNet(), mv)
	p.PrimaryMTU = 1500
	s := converged(t, p, node())
	if s.Links["net2"].MTU != 9000 || s.Links["net2"].Mode != "bridge" {
		t.Fatalf("macvlan defaults: %+v", s.Links["net2"])
	}
	// A kernel-chosen MAC is kept: nil asks for no change.
	ls := s.Links["net1"]
	ls.MAC = mustMAC("02:12:34:56:78:9a")
	s.Links["net1"] = ls
	if steps, err := Plan(p, s); len(steps) != 0 || err != nil {
		t.Fatalf("steps %v err %v", ops(steps), err)
	}
}

func TestPlanRecreate(t *testing.T) {
	mv := Interface{Name: "net1", Kind: KindMacvlan, Master: "eth1", Mode: "bridge"}
	cases := []struct {
		name     string
		from, to Interface
		recreate bool
	}{
		{"kind", bridgeNet(), mv, true},
		{"macvlan mode", mv, Interface{Name: "net1", Kind: KindMacvlan, Master: "eth1", Mode: "private"}, false},
		{"macvlan to passthru", mv, Interface{Name: "net1", Kind: KindMacvlan, Master: "eth1", Mode: "passthru"}, true},
		{"macvlan parent", mv, Interface{Name: "net1", Kind: KindMacvlan, Master: "eth2", Mode: "bridge"}, true},
		{"ipvlan mode", Interface{Name: "net1", Kind: KindIPVlan, Master: "eth1"}, Interface{Name: "net1", Kind: KindIPVlan, Master: "eth1", Mode: "l3"}, true},
		{"vlan id", Interface{Name: "net1", Kind: KindVLAN, Master: "eth1", VLAN: 10}, Interface{Name: "net1", Kind: KindVLAN, Master: "eth1", VLAN: 11}, false},
		{"vlan parent", Interface{Name: "net1", Kind: KindVLAN, Master: "eth1", VLAN: 10}, Interface{Name: "net1", Kind: KindVLAN, Master: "eth2", VLAN: 10}, false},
		{"vlan to bridge", Interface{Name: "net1", Kind: KindVLAN, Master: "eth1", VLAN: 10}, Interface{Name: "net1", Kind: KindBridge, Bridge: "pnbr-a"}, false},
		{"vlan to macvlan", Interface{Name: "net1", Kind: KindVLAN, Master: "eth1", VLAN: 10}, Interface{Name: "net1", Kind: KindMacvlan, Master: "eth1"}, true},
		{"vlan mtu", Interface{Name: "net1", Kind: KindVLAN, Master: "eth1", VLAN: 10}, Interface{Name: "net1", Kind: KindVLAN, Master: "eth1", VLAN: 10, MTU: 1500}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := node()
			n.NodeLinks["eth2"] = NodeLinkState{Index: 4, MTU: 1500}
			s := converged(t, pod(c.from), n)
			steps, err := Plan(pod(c.to), s)
			if err != nil {
				t.Fatal(err)
			}
			recreated := len(steps) > 1 && steps[0].Op == OpDelete && slices.ContainsFunc(steps, func(s Step) bool { return s.Op == OpCreate })
			if recreated != c.recreate {
				t.Fatalf("recreate %t, want %t: %s", recreated, c.recreate, ops(steps))
			}
			converged(t, pod(c.to), s)
		})
	}
}

func TestPlanRemovesOnlyPodnetLinks(t *testing.T) {
	other := Interface{Name: "net2", Kind: KindBridge, Bridge: "admin-br"}
	s := converged(t, pod(bridgeNet(), other), node())
	steps, err := Plan(pod(), s)
	if err != nil {
		t.Fatal(err)
	}
	// pnbr-a is podnet's and may go once empty; admin-br is not.
	if got, want := ops(steps), "delete net1, delete net2, delete-bridge-if-unused pnbr-a"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	after := converged(t, pod(), s)
	if len(after.Links) != 0 || len(after.Ports) != 0 {
		t.Fatalf("left: %+v", after)
	}
	if _, ok := after.NodeLinks["admin-br"]; !ok {
		t.Fatal("admin-br was deleted")
	}
}

func TestPlanRepairsNodeSide(t *testing.T) {
	s := converged(t, pod(bridgeNet()), node())
	host := hostName(testUID, "net1")

	noBridge := cloneState(s)
	delete(noBridge.NodeLinks, "pnbr-a")
	port := noBridge.Ports[host]
	port.Master, port.Up = "", false
	noBridge.Ports[host] = port
	steps, _ := Plan(pod(bridgeNet()), noBridge)
	if got := ops(steps); got != "attach-port net1"+host+", port-up net1"+host {
		t.Fatalf("bridge deleted by hand: %s", got)
	}
	converged(t, pod(bridgeNet()), noBridge)

	noPort := cloneState(s)
	delete(noPort.Ports, host)
	steps, _ = Plan(pod(bridgeNet()), noPort)
	if len(steps) < 2 || steps[0].Op != OpDelete || steps[1].Op != OpCreate {
		t.Fatalf("node end gone: %s", ops(steps))
	}
	converged(t, pod(bridgeNet()), noPort)

	stalePort := cloneState(s)
	delete(stalePort.Links, "net1")
	steps, _ = Plan(pod(bridgeNet()), stalePort)
	if len(steps) < 2 || steps[0].Op != OpDeletePort || steps[1].Op != OpCreate {
		t.Fatalf("node end without pod end: %s", ops(steps))
	}
}

func TestPlanBridgeVLAN(t *testing.T) {
	ifc := bridgeNet()
	ifc.VLAN = 100
	s := converged(t, pod(ifc), node())
	host := hostName(testUID, "net1")
	if port := s.Ports[host]; port.PVID != 100 || !slices.Equal(port.VIDs, []int{100}) || !s.NodeLinks["pnbr-a"].VLANFiltering {
		t.Fatalf("port %+v bridge %+v", port, s.NodeLinks["pnbr-a"])
	}
	ifc.VLAN = 200
	steps, _ := Plan(pod(ifc), s)
	if got := ops(steps); got != "set-vlan net1"+host {
		t.Fatalf("vlan change: %s", got)
	}
	if !slices.Equal(steps[0].RemoveVLANs, []int{100}) {
		t.Fatalf("remove %v", steps[0].RemoveVLANs)
	}
	converged(t, pod(ifc), s)

	// An admin's bridge without VLAN filtering is not changed for us.
	ifc.Bridge = "admin-br"
	if _, err := Plan(pod(ifc), s); err == nil || !strings.Contains(err.Error(), `bridge "admin-br" does not filter VLANs`) {
		t.Fatalf("err %v", err)
	}
	// podnet's own bridge is.
	plain := converged(t, pod(bridgeNet()), node())
	ifc.Bridge = "pnbr-a"
	steps, _ = Plan(pod(ifc), plain)
	if !slices.ContainsFunc(steps, func(s Step) bool { return s.Op == OpEnableVLANFiltering }) {
		t.Fatalf("steps %s", ops(steps))
	}
	converged(t, pod(ifc), plain)
}

func TestPlanErrors(t *testing.T) {
	good := bridgeNet()
	cases := []struct {
		name   string
		pod    Pod
		state  func(*State)
		errHas []string
	}{
		{"no uid", Pod{NetNS: "/x"}, nil, []string{"pod uid: must not be empty"}},
		{"uid with colon", Pod{UID: "a:b", NetNS: "/x"}, nil, []string{`pod uid "a:b"`}},
		{"no netns", Pod{UID: "u"}, nil, []string{"pod netns"}},
		{"primary mtu", Pod{UID: "u", NetNS: "/x", PrimaryMTU: 10}, nil, []string{"primary mtu 10", "68", "65535"}},
		{"long name", pod(Interface{Name: "averyveryverylongname", Kind: KindBridge, Bridge: "b"}), nil, []string{"longer than 15"}},
		{"eth0", pod(Interface{Name: "eth0", Kind: KindBridge, Bridge: "b"}), nil, []string{`"eth0" is not a secondary interface`}},
		{"duplicate", pod(good, good), nil, []string{`interface "net1": listed 2 times`}},
		{"kind", pod(Interface{Name: "n", Kind: "vxlan"}), nil, []string{`kind "vxlan": must be one of`}},
		{"bridge vlan", pod(Interface{Name: "n", Kind: KindBridge, Bridge: "b", VLAN: 5000}), nil, []string{"vlan 5000", "4094"}},
		{"vlan id", pod(Interface{Name: "n", Kind: KindVLAN, Master: "eth1"}), nil, []string{"vlan 0: must be between 1 and 4094"}},
		{"mode", pod(Interface{Name: "n", Kind: KindMacvlan, Master: "eth1", Mode: "l2"}), nil, []string{`mode "l2"`, "passthru"}},
		{"no master", pod(Interface{Name: "n", Kind: KindIPVlan}), nil, []string{"master: must not be empty"}},
		{"mtu", pod(Interface{Name: "n", Kind: KindBridge, Bridge: "b", MTU: 70000}), nil, []string{"mtu 70000", "65535"}},
		{"ipv6 mtu", pod(Interface{Name: "n", Kind: KindBridge, Bridge: "b", MTU: 1000, Addresses: []net.IPNet{mustCIDR("fd00::1/64")}}), nil, []string{"mtu 1000", "1280"}},
		{"mac", pod(Interface{Name: "n", Kind: KindBridge, Bridge: "b", MAC: mustMAC("01:00:5e:00:00:01")}), nil, []string{"unicast"}},
		{"link-local", pod(Interface{Name: "n", Kind: KindBridge, Bridge: "b", Addresses: []net.IPNet{mustCIDR("fe80::1/64")}}), nil, []string{"link-local"}},
		{"bad mask", pod(Interface{Name: "n", Kind: KindBridge, Bridge: "b", Addresses: []net.IPNet{{IP: net.ParseIP("10.0.0.1").To4(), Mask: net.IPMask{255, 0, 255, 0}}}}), nil, []string{"invalid prefix length"}},
		{"route host bits", pod(Interface{Name: "n", Kind: KindBridge, Bridge: "b", Routes: []Route{{Dst: mustCIDR("10.0.0.1/8")}}}), nil, []string{"host bits", "10.0.0.0/8"}},
		{"route family", pod(Interface{Name: "n", Kind: KindBridge, Bridge: "b", Routes: []Route{{Dst: mustNet("10.0.0.0/8"), Gateway: net.ParseIP("fd00::1")}}}), nil, []string{"address family"}},
		{"missing parent", pod(Interface{Name: "n", Kind: KindMacvlan, Master: "eth9"}), nil, []string{`parent link "eth9" not found`}},
		{"mtu above parent", pod(Interface{Name: "n", Kind: KindMacvlan, Master: "eth1", MTU: 9100}), nil, []string{"larger than parent"}},
		{"not a bridge", pod(Interface{Name: "n", Kind: KindBridge, Bridge: "eth1"}), nil, []string{`node link "eth1" is not a bridge`}},
		{"foreign", pod(Interface{Name: "n", Kind: KindBridge, Bridge: "b"}), func(s *State) { s.Foreign["n"] = true }, []string{`interface "n"`, "not podnet's"}},
		{"no eth0", Pod{UID: "u", NetNS: "/x", PrimaryMTU: 1400}, func(s *State) { s.PrimaryMTU = 0 }, []string{`"eth0": not found`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := node()
			if c.state != nil {
				c.state(&s)
			}
			_, err := Plan(c.pod, s)
			if err == nil {
				t.Fatal("want an error")
			}
			for _, want := range c.errHas {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestPlanInvalidInterfaceKeepsItsLinkAndOthersProceed(t *testing.T) {
	other := Interface{Name: "net2", Kind: KindBridge, Bridge: "pnbr-b"}
	s := converged(t, pod(bridgeNet(), other), node())
	bad := bridgeNet()
	bad.MTU = 10
	other.MTU = 1400
	steps, err := Plan(pod(bad, other), s)
	if err == nil || !strings.Contains(err.Error(), `interface "net1"`) {
		t.Fatalf("err %v", err)
	}
	for _, st := range steps {
		if st.Interface == "net1" {
			t.Fatalf("invalid net1 got step %s", st)
		}
	}
	if !slices.ContainsFunc(steps, func(s Step) bool { return s.Interface == "net2" && s.Op == OpSetMTU }) {
		t.Fatalf("net2 was not planned: %s", ops(steps))
	}
}

func TestHostNames(t *testing.T) {
	a, b := hostName(testUID, "net1"), hostName(testUID, "net2")
	if len(a) != 15 || a == b || a != hostName(testUID, "net1") || !strings.HasPrefix(a, "pn") {
		t.Fatalf("host names %q %q", a, b)
	}
	uid, ifname, ok := parsePortAlias(portAlias(testUID, "net1"))
	if !ok || uid != testUID || ifname != "net1" {
		t.Fatalf("parse: %q %q %t", uid, ifname, ok)
	}
	for _, alias := range []string{bridgeAlias, "", "podnet:", "podnet:u:", "other:u:n"} {
		if _, _, ok := parsePortAlias(alias); ok {
			t.Fatalf("%q parsed as a port alias", alias)
		}
	}
}

func TestPlanCanonicalAddresses(t *testing.T) {
	// 16-byte IPv4 with a 128-bit mask, as some callers build them.
	ifc := Interface{Name: "net1", Kind: KindBridge, Bridge: "b",
		Addresses: []net.IPNet{{IP: net.ParseIP("10.1.2.3"), Mask: net.CIDRMask(120, 128)}},
		Routes:    []Route{{Dst: net.IPNet{IP: net.ParseIP("10.9.0.0"), Mask: net.CIDRMask(112, 128)}, Gateway: net.ParseIP("10.1.2.1")}},
	}
	steps, err := Plan(pod(ifc), node())
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range steps {
		switch st.Op {
		case OpAddAddress:
			if len(st.Address.IP) != 4 || st.Address.String() != "10.1.2.3/24" {
				t.Fatalf("address %#v", st.Address)
			}
		case OpAddRoute:
			if len(st.Route.Dst.IP) != 4 || st.Route.Dst.String() != "10.9.0.0/16" || len(st.Route.Gateway) != 4 {
				t.Fatalf("route %#v", st.Route)
			}
		}
	}
	converged(t, pod(ifc), node())
}

// TestPlanVLANNetworkSharesABridge: every pod on one VLAN of one NIC joins
// the same podnet bridge, named from NIC and VLAN id, and a node link of
// that name that is not a podnet bridge is refused by name.
func TestPlanVLANNetworkSharesABridge(t *testing.T) {
	vlan := Interface{Name: "net1", Kind: KindVLAN, Master: "eth1", VLAN: 100}
	steps, err := Plan(pod(vlan), node())
	if err != nil {
		t.Fatal(err)
	}
	host := hostName(testUID, "net1")
	if got, want := ops(steps), "create net1"+host+", attach-port net1"+host+", port-up net1"+host+", up net1"; got != want {
		t.Fatalf("steps: %s, want %s", got, want)
	}
	if br := steps[1].Spec.Bridge; br != vlanBridgeName("eth1", 100) || steps[1].VLANFiltering {
		t.Fatalf("attach-port to %q (filtering %t), want %q without filtering", br, steps[1].VLANFiltering, vlanBridgeName("eth1", 100))
	}
	names := map[string]bool{}
	for _, n := range []string{vlanBridgeName("eth1", 100), vlanBridgeName("eth1", 101), vlanBridgeName("eth2", 100),
		vlanUplinkName("eth1", 100), vlanUplinkName("eth1", 101)} {
		if len(n) > maxLinkName || names[n] {
			t.Fatalf("name %q: too long or not unique", n)
		}
		names[n] = true
	}
	s := node()
	s.NodeLinks[vlanBridgeName("eth1", 100)] = NodeLinkState{Index: 9, MTU: 1500}
	if _, err := Plan(pod(vlan), s); err == nil || !strings.Contains(err.Error(), `vlan 100 on "eth1"`) || !strings.Contains(err.Error(), "not a podnet bridge") {
		t.Fatalf("want an error naming the VLAN, the NIC and why; got %v", err)
	}
}
