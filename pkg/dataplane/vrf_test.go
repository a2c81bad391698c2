package dataplane

import (
	"net"
	"slices"
	"strings"
	"testing"
)

// simulateVRF performs a VRF step the way the kernel does: deleting a VRF
// releases its links, and enslaving a link cycles it, which flushes the
// routes through it and (worst case) its IPv6 addresses.
func simulateVRF(s State, st Step) State {
	switch st.Op {
	case OpCreateVRF:
		s.VRFs[st.VRF] = VRFState{Table: st.Table}
	case OpVRFUp:
		v := s.VRFs[st.VRF]
		v.Up = true
		s.VRFs[st.VRF] = v
	case OpDeleteVRF:
		delete(s.VRFs, st.VRF)
		for name, ls := range s.Links {
			if ls.VRF == st.VRF {
				s.Links[name] = flushed(ls, "")
			}
		}
	case OpSetVRF:
		s.Links[st.Interface] = flushed(s.Links[st.Interface], st.VRF)
	}
	return s
}

func flushed(ls LinkState, vrf string) LinkState {
	ls.VRF = vrf
	ls.Routes = nil
	ls.Addresses = slices.DeleteFunc(slices.Clone(ls.Addresses), func(a net.IPNet) bool { return a.IP.To4() == nil })
	return ls
}

func inVRF(ifc Interface, name string, table uint32) Interface {
	ifc.VRF = &VRF{Name: name, Table: table}
	return ifc
}

func TestPlanVRFCreate(t *testing.T) {
	p := pod(inVRF(bridgeNet(), "red", 1001))
	steps, err := Plan(p, node())
	if err != nil {
		t.Fatal(err)
	}
	host := hostName(testUID, "net1")
	want := "create-vrf , vrf-up , create net1" + host + ", attach-port net1" + host + ", port-up net1" + host +
		", set-vrf net1, add-address net1, add-address net1, up net1, add-route net1"
	if got := ops(steps); got != want {
		t.Fatalf("steps:\n got %s\nwant %s", got, want)
	}
	if steps[0].VRF != "red" || steps[0].Table != 1001 || steps[5].VRF != "red" {
		t.Fatalf("vrf steps %v, %v", steps[0], steps[5])
	}
	if r := steps[len(steps)-1].Route; r.Table != 1001 {
		t.Fatalf("route %v in table %d, want the VRF's 1001", r.Dst, r.Table)
	}
	after := converged(t, p, node())
	if after.Links["net1"].VRF != "red" || after.VRFs["red"] != (VRFState{Table: 1001, Up: true}) {
		t.Fatalf("after: link %+v, vrfs %+v", after.Links["net1"], after.VRFs)
	}
}

// TestPlanVRFChanges: runtime moves into, out of and between VRFs, a
// VRF's table changing, the last interface leaving, and drift (someone
// released the link, deleted the VRF or set it down) all converge, and a
// VRF goes only with its last interface.
func TestPlanVRFChanges(t *testing.T) {
	red := inVRF(bridgeNet(), "red", 1001)
	second := Interface{Name: "net2", Kind: KindMacvlan, Master: "eth1", Addresses: []net.IPNet{mustCIDR("10.7.0.2/24")}}
	base := converged(t, pod(red, inVRF(second, "red", 1001)), node())
	tests := []struct {
		name  string
		p     Pod
		drift func(s *State)
		want  string // ops, with the VRF of VRF steps
	}{
		{name: "leaves the VRF", p: pod(bridgeNet(), second),
			want: "del-route net1, set-vrf net1 , add-address net1, add-address net1, up net1, add-route net1, " +
				"set-vrf net2 , add-address net2, up net2, delete-vrf red"},
		{name: "moves to another VRF", p: pod(inVRF(bridgeNet(), "blue", 1002), inVRF(second, "red", 1001)),
			want: "create-vrf blue, vrf-up blue, del-route net1, set-vrf net1 blue, add-address net1, add-address net1, up net1, add-route net1"},
		{name: "the VRF's table changes", p: pod(inVRF(bridgeNet(), "red", 1005), inVRF(second, "red", 1005)),
			want: "delete-vrf red, create-vrf red, vrf-up red, del-route net1, set-vrf net1 red, add-address net1, add-address net1, up net1, add-route net1, " +
				"set-vrf net2 red, add-address net2, up net2"},
		{name: "one interface goes, the VRF stays", p: pod(red),
			want: "delete net2"},
		{name: "the last interface goes", p: pod(),
			want: "delete net1, delete net2, delete-vrf red, delete-bridge-if-unused "},
		{name: "someone released the link", p: pod(red, inVRF(second, "red", 1001)),
			drift: func(s *State) { s.Links["net1"] = flushed(s.Links["net1"], "") },
			want:  "set-vrf net1 red, add-address net1, add-address net1, up net1, add-route net1"},
		{name: "someone deleted the VRF", p: pod(red, inVRF(second, "red", 1001)),
			drift: func(s *State) { *s = simulateVRF(*s, Step{Op: OpDeleteVRF, VRF: "red"}) },
			want: "create-vrf red, vrf-up red, set-vrf net1 red, add-address net1, add-address net1, up net1, add-route net1, " +
				"set-vrf net2 red, add-address net2, up net2"},
		{name: "someone set the VRF down", p: pod(red, inVRF(second, "red", 1001)),
			drift: func(s *State) { s.VRFs["red"] = VRFState{Table: 1001} },
			want:  "vrf-up red"},
		{name: "podnet stopped before marking it", p: pod(red, inVRF(second, "red", 1001)),
			drift: func(s *State) { s.VRFs["red"] = VRFState{Table: 1001, Up: true, Unfinished: true} },
			want: "delete-vrf red, create-vrf red, vrf-up red, del-route net1, set-vrf net1 red, add-address net1, add-address net1, up net1, add-route net1, " +
				"set-vrf net2 red, add-address net2, up net2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := cloneState(base)
			if tc.drift != nil {
				tc.drift(&s)
			}
			steps, err := Plan(tc.p, s)
			if err != nil {
				t.Fatal(err)
			}
			if got := vrfOps(steps); got != tc.want {
				t.Fatalf("steps:\n got %s\nwant %s", got, tc.want)
			}
			for _, st := range steps {
				if st.Op == OpAddRoute && st.Route.Table != routeTable(tc.p.Interfaces[0]) {
					t.Fatalf("%v: route in table %d", st, st.Route.Table)
				}
			}
			converged(t, tc.p, s)
		})
	}
}

// vrfOps is ops with the VRF of VRF steps and of routes outside main.
func vrfOps(steps []Step) string {
	var out []string
	for _, s := range steps {
		o := string(s.Op) + " " + s.Interface
		switch {
		case s.Op == OpCreateVRF || s.Op == OpVRFUp || s.Op == OpDeleteVRF:
			o += s.VRF
		case s.Op == OpSetVRF:
			o += " " + s.VRF
		}
		out = append(out, o)
	}
	return strings.Join(out, ", ")
}

// TestPlanVRFRefusals: a VRF name that is a link podnet did not create is
// not taken over, and clashes between a pod's VRFs plan nothing for the
// interfaces involved, while the others proceed.
func TestPlanVRFRefusals(t *testing.T) {
	other := Interface{Name: "net9", Kind: KindMacvlan, Master: "eth1"}
	withGW := inVRF(bridgeNet(), "red", 1001)
	withGW.DefaultGateways = []net.IP{net.ParseIP("192.168.1.1").To4()}
	tests := []struct {
		name    string
		p       Pod
		foreign string
		want    []string
	}{
		{"foreign link of that name", pod(inVRF(bridgeNet(), "red", 1001), other), "red",
			[]string{`interface "net1"`, `vrf "red"`, "not podnet's VRF", "not taken over"}},
		{"one name two tables", pod(inVRF(bridgeNet(), "red", 1001), inVRF(Interface{Name: "net2", Kind: KindMacvlan, Master: "eth1"}, "red", 1002), other), "",
			[]string{`interface "net2"`, `vrf "red" table 1002`, "gives it table 1001"}},
		{"one table two names", pod(inVRF(bridgeNet(), "red", 1001), inVRF(Interface{Name: "net2", Kind: KindMacvlan, Master: "eth1"}, "blue", 1001), other), "",
			[]string{`vrf "blue" table 1001`, `the table is vrf "red"'s`}},
		{"named like an interface", pod(inVRF(bridgeNet(), "net9", 1001), other), "",
			[]string{`vrf "net9"`, "an interface of the pod has that name"}},
		{"main table", pod(inVRF(bridgeNet(), "red", 254), other), "",
			[]string{`vrf "red" table 254`, "not 252-255"}},
		{"table zero", pod(inVRF(bridgeNet(), "red", 0), other), "",
			[]string{`vrf "red" table 0`}},
		{"named eth0", pod(inVRF(bridgeNet(), "eth0", 1001), other), "",
			[]string{`vrf name: "eth0"`}},
		{"with the default route", pod(withGW, other), "",
			[]string{"cannot carry the pod's default route"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := node()
			if tc.foreign != "" {
				s.Foreign[tc.foreign] = true
			}
			steps, err := Plan(tc.p, s)
			if err == nil {
				t.Fatalf("planned %v without an error", steps)
			}
			for _, part := range tc.want {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not name %q", err, part)
				}
			}
			for _, st := range steps {
				if st.Interface != "net9" {
					t.Fatalf("step %v for a refused interface or VRF", st)
				}
			}
			if len(steps) == 0 {
				t.Fatal("the valid interface net9 got no steps")
			}
		})
	}
}
