package dataplane

import "fmt"

// whatExists words why the kernel refused ifc as existing (EEXIST, which
// netlink gives for a clash of names and of keys alike): a pod link of its
// name, a node link of its node end's name, or what the kind keeps one of.
func (s *session) whatExists(ifc Interface) string {
	if l, err := linkByName(s.pod, ifc.Name); err == nil && l != nil {
		return fmt.Sprintf("a link named %q already exists in the pod", ifc.Name)
	}
	if hasPort(ifc.Kind) {
		if l, err := linkByName(s.host, hostName(s.uid, ifc.Name)); err == nil && l != nil {
			return fmt.Sprintf("the node already has a link named %q, the name of this interface's node end", hostName(s.uid, ifc.Name))
		}
	}
	if dup := linuxKinds[ifc.Kind].duplicate; dup != nil {
		return dup(ifc)
	}
	return fmt.Sprintf("the kernel refused the %s link as existing, though no link of its name is in the pod", ifc.Kind)
}
