package netpolicy

import "podnet.io/podnet/pkg/netpolicy/filter"

// What a pod link's filter holds (package filter): Compile makes it from
// a verdict, pkg/portsecurity writes it into the pod's netns.
type (
	PolicyPort      = filter.PolicyPort
	PolicyDirection = filter.PolicyDirection
	Allow           = filter.Allow
)
