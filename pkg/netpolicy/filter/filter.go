package filter

import "net/netip"

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
