package underlay

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
)

// Key is what a node keeps one VXLAN device of: the kernel refuses a
// second device of one UDP port and VNI (and family) in a network
// namespace (EEXIST), and every tunnel device podnet makes has its socket
// in the node's, whichever pod it sits in. A spanning bridge's device and
// a pod's point-to-point tunnel of one key are thus one device too many,
// and two locks of one key would each drop what the other admits. The
// key leaves the family out, as the table's tunnel names do: one port
// and VNI is one lock.
type Key struct {
	Port uint16
	VNI  uint32
}

func (k Key) String() string {
	return fmt.Sprintf("vxlan port %d vni %d", k.Port, k.VNI)
}

// KeyOf is the key of a VXLAN tunnel; false for any other tunnel.
func KeyOf(t Tunnel) (Key, bool) {
	if t.Proto != UDP || t.Segment == nil || *t.Segment != *VXLANSegment(t.Segment.Value) {
		return Key{}, false
	}
	return Key{Port: t.Port, VNI: t.Segment.Value}, true
}

// Holding is who holds a key on the node.
type Holding struct {
	// Holder words it for messages: `pod "ns/name"`, `spanning bridge
	// "pnbr-data"`.
	Holder string
	// Inherited marks a lock read back from the node's table at the
	// agent's start whose pod has not been seen again: a tunnel to one of
	// its Peers is that pod's and takes it over.
	Inherited bool
	Peers     []netip.Addr
}

// Reserve decides whether holder may have the VXLAN tunnels it asks for,
// given the keys others hold: none of their keys may be held by another
// holder, and no two of them may share one. The error names each key and
// its holder; nothing is reserved by a refusal.
func Reserve(held map[Key]Holding, holder string, tunnels []Tunnel) error {
	mine := map[Key]bool{}
	for _, t := range tunnels {
		k, ok := KeyOf(t)
		if !ok {
			continue
		}
		if mine[k] {
			return fmt.Errorf("%s: asked for twice by %s; the node has one device per port and VNI", k, holder)
		}
		mine[k] = true
		h, taken := held[k]
		switch {
		case !taken || h.Holder == holder:
		case h.Inherited && len(t.Peers) > 0 && !slices.ContainsFunc(t.Peers, func(p netip.Addr) bool { return !slices.Contains(h.Peers, p.Unmap()) }):
		case h.Inherited:
			return fmt.Errorf("%s: held by %s; the node has one device per port and VNI (retried once that lock is released or claimed)", k, h.Holder)
		default:
			return fmt.Errorf("%s: already held on this node by %s; the node has one device per port and VNI, so %s cannot have it here", k, h.Holder, holder)
		}
	}
	return nil
}

// PointToPointLocks are the locks of the node's pods' point-to-point
// tunnels given the spanning networks' tunnels: each pod's own, in pod
// order, and those inherited from the table at start whose key no pod
// holds now. A tunnel whose key another already has is left out, so the
// table never has two locks of one key (Reserve keeps that from
// happening; this keeps the table whole should it happen anyway).
func PointToPointLocks(spans []Tunnel, pods [][]Tunnel, inherited []Tunnel) []Tunnel {
	taken := map[Key]bool{}
	for _, t := range spans {
		if k, ok := KeyOf(t); ok {
			taken[k] = true
		}
	}
	var out []Tunnel
	add := func(ts []Tunnel) map[Key]bool {
		now := map[Key]bool{}
		for _, t := range ts {
			if k, ok := KeyOf(t); ok && !taken[k] && !now[k] {
				now[k] = true
				out = append(out, t)
			}
		}
		return now
	}
	for _, ts := range pods {
		for k := range add(ts) {
			taken[k] = true
		}
	}
	add(inherited)
	slices.SortFunc(out, func(a, b Tunnel) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
