package netpolicy

import "net/netip"

// What a pod link's filter holds (Compile makes it from a verdict;
// pkg/portsecurity writes it into the pod's netns). These types stand
// apart from the kernel's: the kubectl plugin and the controller use them
// without linking nftables.

// PolicyPort is one pod link's policy: In is what reaches the pod
// through it, Out what the pod sends through it.
type PolicyPort struct {
	Port    string
	In, Out PolicyDirection
}

// PolicyDirection is everything when not Isolated, else only Allow.
type PolicyDirection struct {
	Isolated bool
	Allow    []Allow
}

// Allow lets one peer prefix through on one protocol (AnyProtocol for
// every one) and ports PortLo-PortHi (0-65535 for every port, as for a
// protocol without ports).
type Allow struct {
	Peer           netip.Prefix
	Protocol       uint8
	AnyProtocol    bool
	PortLo, PortHi uint16
}
