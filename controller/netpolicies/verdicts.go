package netpolicies

import (
	"maps"
	"reflect"
	"slices"

	"podnet.io/podnet/controller/infocache"
	"podnet.io/podnet/pkg/netpolicy"
)

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
