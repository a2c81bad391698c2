package peers

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
)

// Span is what the peer watch needs of one spanning network on this node.
type Span struct {
	VNI    int
	Port   int
	Family corev1.IPFamily
	// CIDRs are the networks its underlay addresses must lie in (the
	// profile's underlay.cidrs); none: any usable address.
	CIDRs []string
}

// Trim is the Node informer's transform: it keeps the name, UID and
// resource version (what the cache itself needs), the InternalIP
// addresses and the VNI annotation, and drops the rest (labels, other
// annotations, images, conditions, managed fields), which is most of a
// Node's memory.
func Trim(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		// Deletion tombstones pass through unchanged.
		return obj, nil
	}
	out := &corev1.Node{
		TypeMeta:   n.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion},
	}
	if v, ok := n.Annotations[v1alpha1.NodeVNIsAnnotation]; ok {
		out.Annotations = map[string]string{v1alpha1.NodeVNIsAnnotation: v}
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			out.Status.Addresses = append(out.Status.Addresses, a)
		}
	}
	return out, nil
}

// InternalIP is the node's first InternalIP address of the family, or nil.
func InternalIP(n *corev1.Node, family corev1.IPFamily) net.IP {
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		ip := net.ParseIP(a.Address)
		if ip == nil || familyOf(ip) != family {
			continue
		}
		if v4 := ip.To4(); v4 != nil {
			return v4
		}
		return ip
	}
	return nil
}

func familyOf(ip net.IP) corev1.IPFamily {
	if ip.To4() != nil {
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

// Carries reports whether the node lists vni in its VNI annotation.
func Carries(n *corev1.Node, vni int) bool {
	for _, v := range strings.Split(n.Annotations[v1alpha1.NodeVNIsAnnotation], ",") {
		if v == strconv.Itoa(vni) {
			return true
		}
	}
	return false
}

// FormatVNIs is the VNI annotation's value for a set of VNIs: sorted,
// comma-separated, "" for none.
func FormatVNIs(vnis []int) string {
	s := slices.Sorted(slices.Values(vnis))
	s = slices.Compact(s)
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

// Peers is the flood list of a spanning network on node self: the
// InternalIP of the span's family of every other node that carries the
// network and whose address the network allows, sorted and without
// duplicates (two Node objects claiming one address get one entry), so
// that equal node sets give equal lists. refused names the carrying nodes
// left out because of their address, with the reason.
func Peers(nodes []corev1.Node, self string, span Span) (peers []net.IP, refused []string) {
	for i := range nodes {
		n := &nodes[i]
		if n.Name == self || !Carries(n, span.VNI) {
			continue
		}
		ip := InternalIP(n, span.Family)
		if ip == nil {
			continue
		}
		addr, _ := netip.AddrFromSlice(ip)
		if err := policy.CheckUnderlayAddress(addr, span.CIDRs); err != nil {
			refused = append(refused, fmt.Sprintf("node %q: %v", n.Name, err))
			continue
		}
		peers = append(peers, ip)
	}
	slices.SortFunc(peers, func(a, b net.IP) int { return bytes.Compare(a, b) })
	return slices.CompactFunc(peers, net.IP.Equal), refused
}

// relevantChange reports whether an update changes what Peers reads:
// heartbeats and condition updates do not.
func relevantChange(old, cur *corev1.Node) bool {
	return !slices.Equal(internalIPs(old), internalIPs(cur)) ||
		old.Annotations[v1alpha1.NodeVNIsAnnotation] != cur.Annotations[v1alpha1.NodeVNIsAnnotation]
}

func internalIPs(n *corev1.Node) []string {
	var out []string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			out = append(out, a.Address)
		}
	}
	return out
}
