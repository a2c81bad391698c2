package dataplane

import "github.com/vishvananda/netlink"

// isUnfinishedVeth says whether a pod link without podnet's mark is the
// pod end of a veth podnet was creating for this pod when it stopped (the
// kernel takes no alias at creation, so a veth is marked after it exists).
// It is only when its peer is the node link podnet names for this pod
// interface (hostName: a name in the node's netns, where no tenant makes
// links), unmarked or marked as this pod's, and that peer's own peer is
// this very link in this very netns. A tenant's link of the same name,
// whatever its alias or kind, never is.
func (s *session) isUnfinishedVeth(l netlink.Link) bool {
	a := l.Attrs()
	if l.Type() != "veth" || a.Alias != "" {
		return false
	}
	host, err := linkByName(s.host, hostName(s.uid, a.Name))
	if err != nil || host == nil || host.Type() != "veth" {
		return false
	}
	h := host.Attrs()
	if h.Alias != "" && h.Alias != portAlias(s.uid, a.Name) {
		return false
	}
	if h.ParentIndex != a.Index || a.ParentIndex != h.Index {
		return false
	}
	nsid, err := s.host.GetNetNsIdByFd(int(s.podNS))
	return err == nil && nsid >= 0 && h.NetNsID == nsid
}
