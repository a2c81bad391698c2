package netpolicy

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// TestNodeSpec: a node's verdicts go into its NodePolicy spec and come
// back as the same filter elements; equal allow lists are one set, an
// isolated direction that allows nothing is an empty set, and an
// interface isolated in no direction is not listed.
func TestNodeSpec(t *testing.T) {
	web := Rule{Peers: Prefixes{netip.MustParsePrefix("10.1.0.0/24")}, Ports: []Port{{Protocol: "TCP", Port: 80}, {Protocol: "UDP", Port: 53}}}
	verdicts := map[InterfaceKey]Verdict{
		{"uid-a", "net1"}: {Ingress: Direction{Isolated: true, Rules: []Rule{web}}},
		{"uid-b", "net1"}: {Ingress: Direction{Isolated: true, Rules: []Rule{web}}, Egress: Direction{Isolated: true}},
		{"uid-c", "net1"}: {},
	}
	spec := NodeSpec(verdicts)
	if len(spec.Sets) != 2 || len(spec.Interfaces) != 2 {
		t.Fatalf("spec = %+v, want 2 sets (web, nothing) and 2 interfaces", spec)
	}
	if spec.Interfaces[0].Ingress != spec.Interfaces[1].Ingress {
		t.Errorf("equal allow lists are not one set: %+v", spec.Interfaces)
	}
	got, err := ReadNodeSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("read %d interfaces, want 2", len(got))
	}
	for k, v := range verdicts {
		p, listed := got[k]
		if !v.Ingress.Isolated && !v.Egress.Isolated {
			if listed {
				t.Errorf("%v: isolated in no direction, listed", k)
			}
			continue
		}
		if p.Port != k.Interface {
			t.Errorf("%v: port %q", k, p.Port)
		}
		for _, d := range []struct {
			got  PolicyDirection
			want Direction
		}{{p.In, v.Ingress}, {p.Out, v.Egress}} {
			want := Compile(d.want)
			if d.got.Isolated != want.Isolated || len(d.got.Allow) != len(want.Allow) {
				t.Errorf("%v: read %+v, want %+v", k, d.got, want)
				continue
			}
			for _, a := range want.Allow {
				if !slices.Contains(d.got.Allow, a) {
					t.Errorf("%v: %+v not read back: %+v", k, a, d.got.Allow)
				}
			}
		}
	}
	spec.Interfaces[0].Ingress = "nope"
	if _, err := ReadNodeSpec(spec); err == nil {
		t.Error("a set no one wrote was read")
	}
}

// TestNodeSpecPeerLists: the peers two sets allow on different ports are
// one peer list, written once; an allow naming no list is refused.
func TestNodeSpecPeerLists(t *testing.T) {
	tenant := Prefixes{netip.MustParsePrefix("10.1.0.1/32"), netip.MustParsePrefix("10.1.0.9/32"), netip.MustParsePrefix("fd00::9/128")}
	on := func(port int32) Direction {
		return Direction{Isolated: true, Rules: []Rule{{Peers: tenant, Ports: []Port{{Protocol: "TCP", Port: port}}}}}
	}
	spec := NodeSpec(map[InterfaceKey]Verdict{{"a", "net1"}: {Ingress: on(80)}, {"b", "net1"}: {Ingress: on(443)}})
	if len(spec.Sets) != 2 || len(spec.Peers) != 1 {
		t.Fatalf("spec = %+v, want 2 sets and 1 peer list", spec)
	}
	got, err := ReadNodeSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got[InterfaceKey{"b", "net1"}].In.Allow); n != 3 {
		t.Errorf("b/net1 allows %d elements, want 3 (each tenant address on 443)", n)
	}
	spec.Sets[0].Allow = []string{"p9 tcp 80"}
	if _, err := ReadNodeSpec(spec); err == nil || !strings.Contains(err.Error(), `no peer list "p9"`) {
		t.Errorf("an allow naming no list: %v", err)
	}
}
