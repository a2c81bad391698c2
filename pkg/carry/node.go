package carry

import (
	"fmt"
	"net/netip"
	"slices"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/hostdev"
	"podnet.io/podnet/pkg/policy"
)

// Node is what a node has, as its agent probes it: the names of the links
// of its own network namespace, the addresses assigned to them, its
// Node's InternalIPs, the kernel modules its kernel has, and its Node's
// labels (for a network's nodeSelector).
type Node struct {
	Links       map[string]bool
	Addresses   []netip.Addr
	InternalIPs []netip.Addr
	Modules     map[string]bool
	Labels      map[string]string
	// NICs are the node's free NICs (probed only when a need asks):
	// links a host device interface could take.
	NICs []hostdev.NIC
}

// Has says whether the node satisfies one need.
func (n Node) Has(need Need) bool {
	switch need.What {
	case NeedLink:
		return n.Links[need.Name]
	case NeedModule:
		return n.Modules[need.Name]
	case NeedAddress:
		want, err := netip.ParseAddr(need.Name)
		return err == nil && containsAddr(n.Addresses, want.Unmap())
	case NeedHostDevice:
		return slices.ContainsFunc(n.NICs, need.Devices.Matches)
	case NeedUnderlay:
		// The agent takes the first InternalIP of the family (agent/translate.go,
		// withUnderlay) and then checks it: so does this.
		for _, ip := range n.InternalIPs {
			ip = ip.Unmap()
			if (need.Name == "IPv6") == ip.Is6() {
				return policy.CheckUnderlayAddress(ip, need.CIDRs) == nil
			}
		}
	}
	return false
}

func containsAddr(addrs []netip.Addr, want netip.Addr) bool {
	for _, a := range addrs {
		if a.Unmap() == want {
			return true
		}
	}
	return false
}

// Satisfied returns the needs the node satisfies, in their order.
func (n Node) Satisfied(needs []Need) []Need {
	var out []Need
	for _, need := range needs {
		if n.Has(need) {
			out = append(out, need)
		}
	}
	return out
}

// Carries says whether a node that has what node lists can carry the
// profile network: it satisfies every need of the network, and its labels
// match the network's nodeSelector. It is Lacks(node, network) == nil.
func Carries(node Node, network *v1alpha1.Network) bool {
	return Lacks(node, network) == nil
}

// Lacks lists, in words, what the node lacks to carry the profile
// network (nil: it can): each unsatisfied need but those pods use up
// (Consumed), and the nodeSelector requirements its labels do not match.
func Lacks(node Node, network *v1alpha1.Network) []string {
	var out []string
	for _, need := range Needs(network) {
		if !need.Consumed() && !node.Has(need) {
			out = append(out, need.String())
		}
	}
	if network.NodeSelector == nil {
		return out
	}
	for _, r := range selectorRequirements(network.NodeSelector) {
		if !matches(r, node.Labels) {
			out = append(out, fmt.Sprintf("node label %s %s %v (nodeSelector)", r.Key, r.Operator, r.Values))
		}
	}
	return out
}
