package netpolicy

import (
	"fmt"
	"slices"
	"strings"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"

	"k8s.io/apimachinery/pkg/util/validation"
)

// PolicyForAnnotation names the networks a MultiNetworkPolicy is for,
// as Multus users write it.
const PolicyForAnnotation = "k8s.v1.cni.cncf.io/policy-for"

// PolicyFor reads a policy-for annotation of a policy in namespace: a
// comma-separated list of network names, each alone or as
// <namespace>/<name>, as in podnet's Multus syntax. A namespace other
// than the policy's is refused: a policy selects its own namespace's
// pods only, and a pod names networks of its own namespace only.
func PolicyFor(annotation, namespace string) ([]string, error) {
	var out []string
	for i, item := range strings.Split(annotation, ",") {
		item = strings.TrimSpace(item)
		ns, name, qualified := strings.Cut(item, "/")
		if !qualified {
			ns, name = namespace, item
		}
		ns, name = strings.TrimSpace(ns), strings.TrimSpace(name)
		switch {
		case item == "":
			return nil, fmt.Errorf("%s: item %d is empty", PolicyForAnnotation, i)
		case ns != namespace:
			return nil, fmt.Errorf("%s: %q names namespace %q; a policy in %q is for its own namespace's networks only", PolicyForAnnotation, item, ns, namespace)
		case len(validation.IsDNS1123Label(name)) > 0:
			return nil, fmt.Errorf("%s: %q: %q is not a network name (a DNS label)", PolicyForAnnotation, item, name)
		}
		out = append(out, name)
	}
	return out, nil
}

// Networks is the networks a MultiNetworkPolicy is for, sorted, each
// once. A policy without a policy-for annotation, or with one PolicyFor
// refuses, is for no network; the error says why.
func Networks(p *mnp.MultiNetworkPolicy) ([]string, error) {
	text, ok := p.Annotations[PolicyForAnnotation]
	if !ok {
		return nil, fmt.Errorf("no %s annotation", PolicyForAnnotation)
	}
	networks, err := PolicyFor(text, p.Namespace)
	if err != nil {
		return nil, err
	}
	slices.Sort(networks)
	return slices.Compact(networks), nil
}

// ForNetwork is the policies among ps that are for network, as Evaluate
// takes them.
func ForNetwork(ps []mnp.MultiNetworkPolicy, network string) []Policy {
	var out []Policy
	for i := range ps {
		if networks, err := Networks(&ps[i]); err == nil && slices.Contains(networks, network) {
			out = append(out, Policy{Namespace: ps[i].Namespace, Name: ps[i].Name, Spec: ps[i].Spec})
		}
	}
	return out
}
