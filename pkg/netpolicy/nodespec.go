package netpolicy

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"podnet.io/podnet/api/v1alpha1"
)

// InterfaceKey names one pod interface on a node.
type InterfaceKey struct {
	PodUID, Interface string
}

// NodeSpec writes the verdicts of a node's pod interfaces as its
// NodePolicy spec: the interfaces isolated in a direction, in order, each
// direction naming a set, each distinct allow list written once, and the
// peers of an allow (those it lets through on one protocol and port
// range) as a peer list, each distinct list written once. ReadNodeSpec
// reads it back; the controller writes and the agent reads with these two
// alone.
func NodeSpec(verdicts map[InterfaceKey]Verdict) v1alpha1.NodePolicySpec {
	keys := make([]InterfaceKey, 0, len(verdicts))
	for k := range verdicts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b InterfaceKey) int {
		return cmp.Or(strings.Compare(a.PodUID, b.PodUID), strings.Compare(a.Interface, b.Interface))
	})
	var spec v1alpha1.NodePolicySpec
	sets, peers := map[string]string{}, map[string]string{}
	peerList := func(prefixes []string) string {
		text := strings.Join(prefixes, " ")
		if name, ok := peers[text]; ok {
			return name
		}
		name := "p" + strconv.Itoa(len(spec.Peers))
		peers[text] = name
		spec.Peers = append(spec.Peers, v1alpha1.PeerList{Name: name, Prefixes: text})
		return name
	}
	set := func(d Direction) string {
		if !d.Isolated {
			return ""
		}
		// The peers of each protocol and port range, in Compile's order.
		byTraffic := map[string][]string{}
		var traffic []string
		for _, a := range Compile(d).Allow {
			t := formatTraffic(a)
			if byTraffic[t] == nil {
				traffic = append(traffic, t)
			}
			byTraffic[t] = append(byTraffic[t], a.Peer.Masked().String())
		}
		var allow []string
		for _, t := range traffic {
			prefixes := byTraffic[t]
			slices.Sort(prefixes)
			allow = append(allow, peerList(slices.Compact(prefixes))+" "+t)
		}
		slices.Sort(allow)
		key := strings.Join(allow, ",")
		if name, ok := sets[key]; ok {
			return name
		}
		name := "s" + strconv.Itoa(len(spec.Sets))
		sets[key] = name
		spec.Sets = append(spec.Sets, v1alpha1.PolicySet{Name: name, Allow: allow})
		return name
	}
	for _, k := range keys {
		v := verdicts[k]
		in, out := set(v.Ingress), set(v.Egress)
		if in == "" && out == "" {
			continue
		}
		spec.Interfaces = append(spec.Interfaces, v1alpha1.InterfacePolicy{PodUID: k.PodUID, Interface: k.Interface, Ingress: in, Egress: out})
	}
	return spec
}

// ReadNodeSpec reads a NodePolicy spec: the policy of each interface it
// lists (its Port is the interface's name in the pod).
func ReadNodeSpec(spec v1alpha1.NodePolicySpec) (map[InterfaceKey]PolicyPort, error) {
	peers := make(map[string][]netip.Prefix, len(spec.Peers))
	for _, l := range spec.Peers {
		var list []netip.Prefix
		for _, text := range strings.Fields(l.Prefixes) {
			p, err := netip.ParsePrefix(text)
			if err != nil {
				return nil, fmt.Errorf("peer list %q: %w", l.Name, err)
			}
			list = append(list, p.Masked())
		}
		peers[l.Name] = list
	}
	sets := make(map[string][]Allow, len(spec.Sets))
	for _, s := range spec.Sets {
		var allow []Allow
		for _, text := range s.Allow {
			f := strings.Fields(text)
			if len(f) != 3 {
				return nil, fmt.Errorf("set %q: allow %q: want \"<peers> <protocol> <ports>\"", s.Name, text)
			}
			list, ok := peers[f[0]]
			if !ok {
				return nil, fmt.Errorf("set %q: allow %q: no peer list %q", s.Name, text, f[0])
			}
			a, err := parseTraffic(f[1], f[2])
			if err != nil {
				return nil, fmt.Errorf("set %q: allow %q: %w", s.Name, text, err)
			}
			for _, p := range list {
				a.Peer = p
				allow = append(allow, a)
			}
		}
		sets[s.Name] = allow
	}
	direction := func(name string) (PolicyDirection, error) {
		if name == "" {
			return PolicyDirection{}, nil
		}
		allow, ok := sets[name]
		if !ok {
			return PolicyDirection{}, fmt.Errorf("no set %q", name)
		}
		return PolicyDirection{Isolated: true, Allow: allow}, nil
	}
	out := make(map[InterfaceKey]PolicyPort, len(spec.Interfaces))
	for _, ifc := range spec.Interfaces {
		in, err := direction(ifc.Ingress)
		if err == nil {
			var eg PolicyDirection
			eg, err = direction(ifc.Egress)
			out[InterfaceKey{ifc.PodUID, ifc.Interface}] = PolicyPort{Port: ifc.Interface, In: in, Out: eg}
		}
		if err != nil {
			return nil, fmt.Errorf("pod %s interface %s: %w", ifc.PodUID, ifc.Interface, err)
		}
	}
	return out, nil
}

// FloorOf is a profile network's policy floor as Evaluate takes it; nil
// when the network has none.
func FloorOf(f *v1alpha1.PolicyFloor) (*Floor, error) {
	if f == nil {
		return nil, nil
	}
	scope := func(s *v1alpha1.PolicyScope, field string) (*Scope, error) {
		if s == nil {
			return nil, nil
		}
		out := &Scope{SameNamespace: s.SameNamespace, SameLabel: s.SameLabel}
		for i, c := range s.CIDRs {
			p, err := netip.ParsePrefix(c)
			if err != nil {
				return nil, fmt.Errorf("policyFloor.%s.cidrs[%d]: %w", field, i, err)
			}
			out.CIDRs = append(out.CIDRs, p.Masked())
		}
		return out, nil
	}
	in, err := scope(f.Ingress, "ingress")
	if err != nil {
		return nil, err
	}
	eg, err := scope(f.Egress, "egress")
	if err != nil {
		return nil, err
	}
	return &Floor{Ingress: in, Egress: eg}, nil
}
