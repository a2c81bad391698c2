package peers

import (
	"bytes"
	"net"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Trim is the Node informer's transform: it keeps the name, UID and
// resource version (what the cache itself needs) and the InternalIP
// addresses, and drops the rest (labels, annotations, images, conditions,
// managed fields), which is most of a Node's memory.
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

// Peers is the flood list of a spanning network on node self: the
// InternalIP of the family of every other node that has one, sorted and
// without duplicates (two Node objects claiming one address get one
// entry), so that equal node sets give equal lists.
func Peers(nodes []corev1.Node, self string, family corev1.IPFamily) []net.IP {
	var out []net.IP
	for i := range nodes {
		if nodes[i].Name == self {
			continue
		}
		if ip := InternalIP(&nodes[i], family); ip != nil {
			out = append(out, ip)
		}
	}
	slices.SortFunc(out, func(a, b net.IP) int { return bytes.Compare(a, b) })
	return slices.CompactFunc(out, net.IP.Equal)
}

// addressesChanged reports whether an update changes what Peers and
// Local read: heartbeats and condition updates do not.
func addressesChanged(old, cur *corev1.Node) bool {
	return !slices.Equal(internalIPs(old), internalIPs(cur))
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
