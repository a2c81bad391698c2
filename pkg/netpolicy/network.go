package netpolicy

import (
	"errors"
	"fmt"

	"podnet.io/podnet/api/v1alpha1"
)

// Member is a pod on one network as the network's evaluation takes it.
type Member struct {
	Pod Pod
	// Floor is the floor of the profile that granted the pod the network;
	// nil when it has none.
	Floor *Floor
	// Space is the address space of the pod's interface on the network
	// (rules.SpaceName): the segment on which its addresses are its own.
	Space string
}

// EvaluateNetwork gives every pod on one network its verdict under the
// policies for that network's name. Pods are each other's peers only
// within one address space: two profiles may offer one network name on
// two bridges, even with one CIDR, and there an address a selector takes
// from the other bridge names whoever holds it on this one, not the pod
// the selector meant. Each space is judged apart, each pod under its own
// floor (EvaluateEach); the problems are the policies', reported once.
// The controller and the kubectl plugin both judge a network with it.
func EvaluateNetwork(policies []Policy, namespaces map[string]map[string]string, members []Member) (map[string]Verdict, []Problem) {
	var spaces []string
	bySpace := map[string][]Member{}
	for _, m := range members {
		if _, ok := bySpace[m.Space]; !ok {
			spaces = append(spaces, m.Space)
		}
		bySpace[m.Space] = append(bySpace[m.Space], m)
	}
	if len(spaces) == 0 {
		_, problems := EvaluateEach(Input{Policies: policies, Namespaces: namespaces}, nil)
		return map[string]Verdict{}, problems
	}
	out := make(map[string]Verdict, len(members))
	var problems []Problem
	for i, s := range spaces {
		in := Input{Policies: policies, Namespaces: namespaces, Pods: make([]Pod, len(bySpace[s]))}
		floors := make([]*Floor, len(bySpace[s]))
		for j, m := range bySpace[s] {
			in.Pods[j], floors[j] = m.Pod, m.Floor
		}
		verdicts, ps := EvaluateEach(in, floors)
		if i == 0 {
			problems = ps
		}
		for k, v := range verdicts {
			out[k] = v
		}
	}
	return out, problems
}

// ProfileFloors is the floor of each of a profile's networks that has
// one, by network name. A floor FloorOf refuses (the CRD's validation
// keeps such out) isolates both directions and allows nothing, since the
// admin asked for isolation; the refusal is returned beside, to be logged.
func ProfileFloors(p *v1alpha1.NetworkProfile) (map[string]*Floor, error) {
	out := map[string]*Floor{}
	var errs []error
	for _, n := range p.Spec.Networks {
		f, err := FloorOf(n.PolicyFloor)
		if err != nil {
			errs = append(errs, fmt.Errorf("profile %q network %q: %w; it isolates everything", p.Name, n.Name, err))
			f = &Floor{Ingress: &Scope{}, Egress: &Scope{}}
		}
		if f != nil {
			out[n.Name] = f
		}
	}
	return out, errors.Join(errs...)
}
