package dataplane

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// vrfAlias marks a VRF device podnet created inside a pod.
const vrfAlias = HostLinkAlias + aliasSep + "vrf"

// observeVRF records a VRF device of the pod: podnet's in st.VRFs (one in
// podnet's group without the mark is one podnet stopped creating), any
// other in st.Foreign.
func observeVRF(v *netlink.Vrf, st *State) {
	a := v.Attrs()
	unfinished := a.Alias == "" && a.Group == podGroup
	if a.Alias != vrfAlias && !unfinished {
		st.Foreign[a.Name] = true
		return
	}
	st.VRFs[a.Name] = VRFState{Table: v.Table, Up: a.Flags&net.FlagUp != 0, Unfinished: unfinished}
}

// createVRF makes a VRF device in the pod, marked and in podnet's group.
// A link of that name that is already there is refused: it is not
// podnet's (observeVRF would have found it), and podnet takes over nothing.
func (s *session) createVRF(name string, table uint32) error {
	attrs := netlink.NewLinkAttrs()
	attrs.Name = name
	attrs.Group = podGroup
	err := s.pod.LinkAdd(&netlink.Vrf{LinkAttrs: attrs, Table: table})
	if errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("a link of that name already exists in the pod and is not podnet's VRF; it is not taken over: %w", err)
	}
	if err != nil {
		return explainNotSupported(err, "vrf")
	}
	l, err := s.pod.LinkByName(name)
	if err != nil {
		return fmt.Errorf("find the new VRF in the pod: %w", err)
	}
	if err := s.pod.LinkSetAlias(l, vrfAlias); err != nil {
		return fmt.Errorf("mark VRF: %w", err)
	}
	return nil
}

// podnetVRF returns podnet's VRF device of that name; nil, nil when absent.
func (s *session) podnetVRF(name string) (netlink.Link, error) {
	l, err := linkByName(s.pod, name)
	if err != nil || l == nil {
		return nil, err
	}
	a := l.Attrs()
	if _, ok := l.(*netlink.Vrf); !ok || (a.Alias != vrfAlias && !(a.Alias == "" && a.Group == podGroup)) {
		return nil, errors.New("the link of that name in the pod is not podnet's VRF and is left alone")
	}
	return l, nil
}

func (s *session) vrfUp(name string) error {
	l, err := s.podnetVRF(name)
	if err == nil && l == nil {
		err = errors.New("not found in the pod")
	}
	if err != nil {
		return err
	}
	return s.pod.LinkSetUp(l)
}

// deleteVRF deletes podnet's VRF device; one already gone is fine. The
// kernel releases the links in it.
func (s *session) deleteVRF(name string) error {
	l, err := s.podnetVRF(name)
	if err != nil || l == nil {
		return err
	}
	return ignore(s.pod.LinkDel(l), unix.ENODEV)
}

// setVRF enslaves a pod link to podnet's VRF of that name, or releases it
// from its VRF ("").
func (s *session) setVRF(l netlink.Link, name string) error {
	if name == "" {
		return s.pod.LinkSetNoMaster(l)
	}
	vrf, err := s.podnetVRF(name)
	if err == nil && vrf == nil {
		err = errors.New("not found in the pod")
	}
	if err != nil {
		return fmt.Errorf("vrf %q: %w", name, err)
	}
	return s.pod.LinkSetMasterByIndex(l, vrf.Attrs().Index)
}

// applyVRFStep runs the steps that work on a VRF device.
func (s *session) applyVRFStep(st Step) error {
	switch st.Op {
	case OpCreateVRF:
		return s.createVRF(st.VRF, st.Table)
	case OpVRFUp:
		return s.vrfUp(st.VRF)
	case OpDeleteVRF:
		return s.deleteVRF(st.VRF)
	}
	return s.withPodLink(st.Interface, func(l netlink.Link) error { return s.setVRF(l, st.VRF) })
}

// tableOf is a listed route's table in the planner's terms (0 = main).
func tableOf(r netlink.Route) uint32 {
	if r.Table == unix.RT_TABLE_MAIN || r.Table == 0 {
		return 0
	}
	return uint32(r.Table)
}
