package netpolicy

import (
	"fmt"
	"strings"

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
