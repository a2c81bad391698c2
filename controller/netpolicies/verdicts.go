package netpolicies

import (
	"maps"
	"reflect"
	"slices"

	"podnet.io/podnet/controller/infocache"
	"podnet.io/podnet/pkg/netpolicy"
)

// evaluateNetwork gives every pod of one network its verdict, each under
// the floor of the profile that granted it the network (floors[i] is
// in.Pods[i]'s; nil: none). Profiles may offer one network name with
// different floors: the network is evaluated once per distinct floor,
// always with all its pods (they are each other's peers whatever profile
// granted them), and each pod takes its verdict from the evaluation of its
// own floor. The problems are those of the policies, the same in every
// evaluation. in.Floor is ignored.
func evaluateNetwork(in netpolicy.Input, floors []*netpolicy.Floor) (map[string]netpolicy.Verdict, []netpolicy.Problem) {
	var distinct []*netpolicy.Floor
	group := make([]int, len(in.Pods))
	for i, f := range floors {
		j := slices.IndexFunc(distinct, func(d *netpolicy.Floor) bool { return reflect.DeepEqual(d, f) })
		if j < 0 {
			j = len(distinct)
			distinct = append(distinct, f)
		}
		group[i] = j
	}
	if len(distinct) == 0 {
		distinct = []*netpolicy.Floor{nil} // no pods: the policies' problems all the same
	}
	out := make(map[string]netpolicy.Verdict, len(in.Pods))
	var problems []netpolicy.Problem
	for j, f := range distinct {
		in.Floor = f
		verdicts, ps := netpolicy.Evaluate(in)
		if j == 0 {
			problems = ps
		}
		for i, p := range in.Pods {
			if group[i] == j {
				out[p.Key()] = verdicts[p.Key()]
			}
		}
	}
	return out, problems
}

// placed is an isolated interface's verdict, and its node.
type placed struct {
	node    string
	verdict netpolicy.Verdict
}

// isolated says whether a verdict isolates a direction: only such an
// interface is written (NodeSpec leaves the others out).
func isolated(v netpolicy.Verdict) bool { return v.Ingress.Isolated || v.Egress.Isolated }

// placements are the isolated interfaces on network of the pods that
// have a node, with their verdicts (by pod, namespace/name).
func placements(network string, pods []*infocache.PodInfo, verdicts map[string]netpolicy.Verdict) map[netpolicy.InterfaceKey]placed {
	out := map[netpolicy.InterfaceKey]placed{}
	for _, p := range pods {
		v := verdicts[p.Namespace+"/"+p.Name]
		if p.Node == "" || !isolated(v) {
			continue
		}
		for _, a := range p.Interfaces {
			if a.Network == network {
				out[netpolicy.InterfaceKey{PodUID: string(p.UID), Interface: a.Interface}] = placed{node: p.Node, verdict: v}
			}
		}
	}
	return out
}

// verdicts are the isolated interfaces of each network, kept between
// passes: a pass recomputes the dirty networks only, and writes a node's
// object from the interfaces of every network on it. Only the pass (one
// worker) uses it.
type verdicts struct {
	byNetwork map[string]map[netpolicy.InterfaceKey]placed
	// byNode are the same interfaces by node: a pod's interfaces are on
	// one network each.
	byNode map[string]map[netpolicy.InterfaceKey]netpolicy.Verdict
}

func newVerdicts() *verdicts {
	return &verdicts{byNetwork: map[string]map[netpolicy.InterfaceKey]placed{}, byNode: map[string]map[netpolicy.InterfaceKey]netpolicy.Verdict{}}
}

// replace sets a network's isolated interfaces and returns the nodes
// where any of them came, went, moved or changed verdict.
func (s *verdicts) replace(network string, next map[netpolicy.InterfaceKey]placed) map[string]bool {
	prev := s.byNetwork[network]
	touched := map[string]bool{}
	for k, was := range prev {
		now, ok := next[k]
		if !ok || now.node != was.node || !reflect.DeepEqual(now.verdict, was.verdict) {
			touched[was.node] = true
		}
		delete(s.byNode[was.node], k)
		if len(s.byNode[was.node]) == 0 {
			delete(s.byNode, was.node)
		}
	}
	for k, now := range next {
		if was, ok := prev[k]; !ok || was.node != now.node {
			touched[now.node] = true
		}
		on := s.byNode[now.node]
		if on == nil {
			on = map[netpolicy.InterfaceKey]netpolicy.Verdict{}
			s.byNode[now.node] = on
		}
		on[k] = now.verdict
	}
	if len(next) == 0 {
		delete(s.byNetwork, network)
	} else {
		s.byNetwork[network] = next
	}
	return touched
}

// ofNode is the verdict of every isolated interface on node, of every
// network; the caller must not change it.
func (s *verdicts) ofNode(node string) map[netpolicy.InterfaceKey]netpolicy.Verdict {
	return s.byNode[node]
}

// networks and nodes are those with isolated interfaces.
func (s *verdicts) networks() []string { return slices.Collect(maps.Keys(s.byNetwork)) }
func (s *verdicts) nodes() []string    { return slices.Collect(maps.Keys(s.byNode)) }
