package dataplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// execute performs the steps in order. A failed step stops the remaining
// steps of its interface only; an interface created in this run is then
// removed again, so nothing is left half-configured. It returns the
// interfaces that failed.
func (s *session) execute(ctx context.Context, steps []Step) (map[string]bool, error) {
	failed := map[string]bool{}
	var errs []error
	for _, st := range steps {
		if st.Interface != "" && failed[st.Interface] {
			continue
		}
		err := ctx.Err()
		if err == nil {
			err = s.applyStep(st)
		}
		if err == nil {
			continue
		}
		errs = append(errs, describe(st, err))
		if st.Interface == "" {
			continue
		}
		failed[st.Interface] = true
		if ifc, ok := s.created[st.Interface]; ok {
			if rbErr := s.removeInterface(ifc); rbErr != nil {
				errs = append(errs, fmt.Errorf("interface %q: roll back: %w", st.Interface, rbErr))
			}
		}
	}
	return failed, errors.Join(errs...)
}

// describe names the object a failed step worked on.
func describe(st Step, err error) error {
	switch {
	case st.Interface != "" && st.Node != "":
		return fmt.Errorf("interface %q (node link %q): %s: %w", st.Interface, st.Node, st.Op, err)
	case st.Interface != "":
		return fmt.Errorf("interface %q: %s: %w", st.Interface, st.Op, err)
	case st.VRF != "":
		return fmt.Errorf("vrf %q: %s: %w", st.VRF, st.Op, err)
	default:
		return fmt.Errorf("node link %q: %s: %w", st.Node, st.Op, err)
	}
}

// removeInterface deletes a pod link this run created, its node end, and
// its bridge if that is podnet's and now empty.
func (s *session) removeInterface(ifc Interface) error {
	var errs []error
	if err := s.deletePodLink(ifc.Name); err != nil {
		errs = append(errs, err)
	}
	if hasPort(ifc.Kind) {
		if _, err := s.deletePort(hostName(s.uid, ifc.Name), ifc.Name); err != nil {
			errs = append(errs, err)
		}
		if err := s.d.removePortRules(int(s.hostNS), hostName(s.uid, ifc.Name)); err != nil {
			errs = append(errs, err)
		}
		s.d.bridgeMu.Lock()
		_, err := s.d.deleteBridgeIfUnused(s.host, s.hostNS, ifc.Bridge)
		s.d.bridgeMu.Unlock()
		if err != nil {
			errs = append(errs, err)
		}
	}
	delete(s.created, ifc.Name)
	return errors.Join(errs...)
}

func (s *session) applyStep(st Step) error {
	switch st.Op {
	case OpDelete:
		return s.deletePodLink(st.Interface)
	case OpDeletePort:
		_, err := s.deletePort(st.Node, st.Interface)
		return err
	case OpCreate:
		return s.create(st.Spec)
	case OpAttachPort:
		return s.attachPort(st.Node, st.Spec, st.VLANFiltering)
	case OpEnableVLANFiltering:
		return s.enableVLANFiltering(st.Node)
	case OpSetVLAN:
		return s.withPort(st.Node, func(l netlink.Link) error { return s.setVLAN(l, st.VLAN, st.RemoveVLANs) })
	case OpSetPortMTU:
		return s.withPort(st.Node, func(l netlink.Link) error { return s.host.LinkSetMTU(l, st.MTU) })
	case OpSetPortAlias:
		return s.withPort(st.Node, func(l netlink.Link) error { return s.host.LinkSetAlias(l, portAlias(s.uid, st.Interface)) })
	case OpPortUp:
		return s.portUp(st)
	case OpSetMTU, OpSetPrimaryMTU:
		return s.withPodLink(st.Interface, func(l netlink.Link) error { return s.pod.LinkSetMTU(l, st.MTU) })
	case OpSetMAC:
		s.touched[st.Interface] = true
		return s.withPodLink(st.Interface, func(l netlink.Link) error { return s.pod.LinkSetHardwareAddr(l, st.MAC) })
	case OpSetMode:
		return s.withPodLink(st.Interface, func(l netlink.Link) error { return s.setMode(l, st.Mode) })
	case OpSetOffloads:
		return s.setOffloads(st.Interface, st.Offloads)
	case OpSetSetting:
		return s.withPodLink(st.Interface, func(l netlink.Link) error { return s.setSetting(l, st.Setting, st.Value) })
	case OpUp:
		s.touched[st.Interface] = true
		return s.withPodLink(st.Interface, s.podLinkUp)
	case OpAddAddress:
		return s.withPodLink(st.Interface, func(l netlink.Link) error { return s.addAddress(l, st.Address) })
	case OpDelAddress:
		return s.withPodLink(st.Interface, func(l netlink.Link) error { return s.delAddress(l, st.Address) })
	case OpAddRoute:
		return s.withPodLink(st.Interface, func(l netlink.Link) error { return s.pod.RouteAdd(podRoute(l, st.Route)) })
	case OpDelRoute:
		return s.withPodLink(st.Interface, func(l netlink.Link) error { return ignore(s.pod.RouteDel(podRoute(l, st.Route)), unix.ESRCH) })
	case OpCreateVRF, OpVRFUp, OpDeleteVRF, OpSetVRF:
		return s.applyVRFStep(st)
	case OpConfigureTunnel:
		if configure := linuxKinds[st.Spec.Kind].configure; configure != nil {
			return configure(s, st.Spec)
		}
		return fmt.Errorf("kind %q has no tunnel to configure", st.Spec.Kind)
	case OpDeleteBridgeIfUnused:
		s.d.bridgeMu.Lock()
		defer s.d.bridgeMu.Unlock()
		_, err := s.d.deleteBridgeIfUnused(s.host, s.hostNS, st.Node)
		return err
	}
	return fmt.Errorf("unknown step %q", st.Op)
}

// withPodLink runs f on a pod link, found in the cache or by name.
func (s *session) withPodLink(name string, f func(netlink.Link) error) error {
	return withCached(s.pod, s.links, name, f)
}

// withPort runs f on a node veth end, found in the cache or by name.
func (s *session) withPort(name string, f func(netlink.Link) error) error {
	return withCached(s.host, s.ports, name, f)
}

// withCached runs f on a link from cache, looking it up by name through h
// (and keeping it) when it is not there yet.
func withCached(h *netlink.Handle, cache map[string]netlink.Link, name string, f func(netlink.Link) error) error {
	l, ok := cache[name]
	if !ok {
		var err error
		if l, err = h.LinkByName(name); err != nil {
			return err
		}
		cache[name] = l
	}
	return f(l)
}

// create makes a pod interface directly inside the pod's netns: the kernel
// gets the target netns with the request, so nothing is created on the node
// and moved afterwards (a move costs an RCU barrier and briefly exposes the
// link on the node). Every pod link is in podGroup from its creation.
func (s *session) create(ifc Interface) error {
	err := s.createLink(ifc)
	if errors.Is(err, unix.EEXIST) && s.deleteLeftNodeEnd(ifc) {
		err = s.createLink(ifc)
	}
	if err != nil {
		if errors.Is(err, unix.EEXIST) {
			return &ExistsError{Interface: ifc.Name, Cause: s.whatExists(ifc), Err: err}
		}
		return explainNotSupported(err, string(ifc.Kind))
	}
	s.created[ifc.Name] = ifc
	l, err := s.pod.LinkByName(ifc.Name)
	if err != nil {
		return fmt.Errorf("find the new link in the pod: %w", err)
	}
	// A veth is marked as it goes up (podLinkUp): until then it is an
	// unfinished veth (isUnfinishedVeth), which the next Apply makes
	// anew should this run stop.
	if !linuxKinds[ifc.Kind].hasPeer {
		if err := s.pod.LinkSetAlias(l, newLinkAlias(ifc)); err != nil {
			return fmt.Errorf("mark pod link: %w", err)
		}
	}
	if !ifc.AcceptRA {
		if err := s.noRouterAdverts(ifc.Name); err != nil {
			return fmt.Errorf("pod link without router advertisements: %w", err)
		}
	}
	s.links[ifc.Name] = l
	if egressSecured(ifc.Kind) {
		// Before the link goes up: its egress is never unfiltered.
		if err := s.secureEgress(ifc, podFacts{mac: l.Attrs().HardwareAddr}, true); err != nil {
			return fmt.Errorf("port security: %w", err)
		}
	}
	return nil
}

// deleteLeftNodeEnd deletes the node end of ifc's name when it is marked
// as this pod interface's (deletePort), and says whether it did. The plan
// reads node ends only of the pod links it sees, so a node end whose pod
// end is gone (an earlier sandbox of the pod whose netns is still being
// torn down) shows itself only when it holds the name of the one being
// created.
func (s *session) deleteLeftNodeEnd(ifc Interface) bool {
	if !hasPort(ifc.Kind) {
		return false
	}
	deleted, err := s.deletePort(hostName(s.uid, ifc.Name), ifc.Name)
	return deleted && err == nil
}

// newLinkAlias is the mark of a pod link this run creates: podnet's, or
// podnet's while its addresses are checked on the wire.
func newLinkAlias(ifc Interface) string {
	if ifc.wireChecked() {
		return checkingAlias(ifc.Name)
	}
	return podAlias(ifc.Name)
}

// podLinkUp sets a pod link up; a veth this run created gets its mark in
// the same request.
func (s *session) podLinkUp(l netlink.Link) error {
	ifc, created := s.created[l.Attrs().Name]
	if !created || !linuxKinds[ifc.Kind].hasPeer {
		return s.pod.LinkSetUp(l)
	}
	req := nl.NewNetlinkRequest(unix.RTM_SETLINK, unix.NLM_F_ACK)
	req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: s.podRaw}
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(l.Attrs().Index)
	msg.Flags, msg.Change = unix.IFF_UP, unix.IFF_UP
	req.AddData(msg)
	req.AddData(nl.NewRtAttr(unix.IFLA_IFALIAS, []byte(newLinkAlias(ifc))))
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}

// createLink sends the request that creates the pod link: a veth through
// the node's raw socket, any other kind through the netlink library.
func (s *session) createLink(ifc Interface) error {
	lk := linuxKinds[ifc.Kind]
	if lk.hasPeer {
		return s.createVeth(ifc)
	}
	if lk.take != nil {
		return lk.take(s, ifc)
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = ifc.Name
	attrs.MTU = ifc.MTU
	attrs.HardwareAddr = ifc.MAC
	attrs.Namespace = netlink.NsFd(int(s.podNS))
	attrs.Group = podGroup
	link, err := lk.podLink(s, ifc, attrs)
	if err != nil {
		return err
	}
	return s.host.LinkAdd(link)
}

// setMode changes a pod link's mode in place, for kinds whose mode the
// kernel changes so.
func (s *session) setMode(l netlink.Link, mode string) error {
	for k, lk := range linuxKinds {
		if lk.linkType == l.Type() && lk.setMode != nil && podKind(k) == k {
			return lk.setMode(s.pod, l, mode)
		}
	}
	return fmt.Errorf("a %s link's mode cannot be changed in place", l.Type())
}

// attachPort puts a node end into its bridge, creating the bridge (and, for
// a VLAN network, its uplink) when absent. Holding bridgeMu keeps another
// pod's last port from deleting the bridge between the two.
func (s *session) attachPort(port string, ifc Interface, vlanFiltering bool) error {
	s.d.bridgeMu.Lock()
	defer s.d.bridgeMu.Unlock()
	br, err := s.bridge(ifc, vlanFiltering)
	if err != nil {
		return err
	}
	if join := linuxKinds[ifc.Kind].join; join != nil {
		if err := join(s.host, ifc, br); err != nil {
			return err
		}
	}
	if s.inBridge[port] == br.Attrs().Index {
		return nil // createVeth put it there
	}
	return s.setNodeLink(port, false, nl.NewRtAttr(unix.IFLA_MASTER, nl.Uint32Attr(uint32(br.Attrs().Index))))
}

// bridge returns the bridge a port joins: the plain one the plan read
// (plainBridge), or else read, and created when absent. The caller holds
// bridgeMu.
func (s *session) bridge(ifc Interface, vlanFiltering bool) (netlink.Link, error) {
	if index, ok := s.plainBridge(ifc); ok {
		return &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: ifc.Bridge, Index: index}}, nil
	}
	return ensureBridge(s.host, ifc.Bridge, vlanFiltering, spanBridgeAlias(spanPort(ifc)))
}

// plainBridge is the index of the port's bridge as this session's plan
// read it, when that bridge has no spanning port and no uplink for the
// port to join first, and no podnet bridge changed since: podnet deletes
// bridges only under bridgeMu, which the caller holds, so it is still
// there and the same, unless someone else deleted it (createVeth).
func (s *session) plainBridge(ifc Interface) (int, bool) {
	index, ok := s.bridges[ifc.Bridge]
	if !ok || spanPort(ifc) != "" || kinds[ifc.Kind].parent || s.d.bridgesChanged.Load() != s.bridgesChangedAtPlan {
		return 0, false
	}
	return index, true
}

// ensureUplink makes the node's VLAN subinterface of ifc.Master for
// ifc.VLAN a port of br: created (marked, up) when absent. The kernel allows
// one subinterface per parent and VLAN id, so one that podnet did not make
// is refused by name rather than taken over.
func ensureUplink(h *netlink.Handle, ifc Interface, br netlink.Link) error {
	parent, err := h.LinkByName(ifc.Master)
	if err != nil {
		return fmt.Errorf("parent link %q: %w", ifc.Master, err)
	}
	name := vlanUplinkName(ifc.Master, ifc.VLAN)
	l, err := linkByName(h, name)
	if err != nil {
		return err
	}
	if l == nil {
		attrs := netlink.NewLinkAttrs()
		attrs.Name = name
		attrs.ParentIndex = parent.Attrs().Index
		err := h.LinkAdd(&netlink.Vlan{LinkAttrs: attrs, VlanId: ifc.VLAN})
		if errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("the node already has a subinterface of %q for vlan %d that podnet did not create, "+
				"and the kernel allows one per parent and VLAN id: %w", ifc.Master, ifc.VLAN, err)
		}
		if err != nil {
			return fmt.Errorf("create uplink %q: %w", name, explainNotSupported(err, "802.1Q VLAN (8021q)"))
		}
		if l, err = h.LinkByName(name); err != nil {
			return fmt.Errorf("uplink %q: %w", name, err)
		}
	}
	v, ok := l.(*netlink.Vlan)
	if !ok || v.VlanId != ifc.VLAN || v.ParentIndex != parent.Attrs().Index || (v.Alias != "" && v.Alias != uplinkAlias) {
		return fmt.Errorf("node link %q is not podnet's uplink for vlan %d on %q and is left alone", name, ifc.VLAN, ifc.Master)
	}
	// An unmarked one of this name is podnet's, made by a run that
	// stopped before it could mark it.
	if v.Alias != uplinkAlias {
		if err := h.LinkSetAlias(l, uplinkAlias); err != nil {
			return fmt.Errorf("mark uplink %q: %w", name, err)
		}
	}
	if v.MasterIndex != br.Attrs().Index {
		if err := h.LinkSetMasterByIndex(l, br.Attrs().Index); err != nil {
			return fmt.Errorf("uplink %q into bridge %q: %w", name, br.Attrs().Name, err)
		}
	}
	if v.Flags&net.FlagUp == 0 {
		if err := h.LinkSetUp(l); err != nil {
			return fmt.Errorf("uplink %q up: %w", name, err)
		}
	}
	return nil
}

// ensureBridge returns the node bridge of that name, creating it (marked as
// podnet's, up) when absent. A bridge podnet did not create is used as it is.
func ensureBridge(h *netlink.Handle, name string, vlanFiltering bool, alias string) (netlink.Link, error) {
	l, err := linkByName(h, name)
	if err != nil {
		return nil, err
	}
	if l == nil {
		attrs := netlink.NewLinkAttrs()
		attrs.Name = name
		br := &netlink.Bridge{LinkAttrs: attrs}
		if vlanFiltering {
			br.VlanFiltering = &vlanFiltering
		}
		if err := h.LinkAdd(br); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("create bridge %q: %w", name, explainNotSupported(err, "bridge vlan_filtering"))
		}
		if l, err = h.LinkByName(name); err != nil {
			return nil, fmt.Errorf("bridge %q: %w", name, err)
		}
		if err := h.LinkSetAlias(l, alias); err != nil {
			return nil, fmt.Errorf("mark bridge %q: %w", name, err)
		}
		// No IPv6 link-local (and podnet adds no IPv4): a pod on the
		// bridge must not reach the node through it.
		if err := h.LinkSetIP6AddrGenMode(l, nl.IN6_ADDR_GEN_MODE_NONE); err != nil {
			return nil, fmt.Errorf("bridge %q: turn off IPv6 address generation: %w", name, err)
		}
		if err := h.LinkSetUp(l); err != nil {
			return nil, fmt.Errorf("bridge %q up: %w", name, err)
		}
		return l, nil
	}
	if _, ok := l.(*netlink.Bridge); !ok {
		return nil, fmt.Errorf("node link %q is a %s, not a bridge", name, l.Type())
	}
	// A podnet bridge's alias names its spanning port before that port
	// joins, so that the port is never taken for a user.
	if cur := l.Attrs().Alias; isBridgeAlias(cur) && cur != alias && alias != bridgeAlias {
		if err := h.LinkSetAlias(l, alias); err != nil {
			return nil, fmt.Errorf("mark bridge %q: %w", name, err)
		}
	}
	return l, nil
}

// enableVLANFiltering turns on VLAN filtering of a bridge podnet created.
func (s *session) enableVLANFiltering(bridge string) error {
	s.d.bridgeMu.Lock()
	defer s.d.bridgeMu.Unlock()
	s.d.bridgesChanged.Add(1)
	l, err := s.host.LinkByName(bridge)
	if err != nil {
		return err
	}
	if !isBridgeAlias(l.Attrs().Alias) {
		return fmt.Errorf("bridge %q is not podnet's: its vlan_filtering is left alone", bridge)
	}
	return explainNotSupported(s.host.BridgeSetVlanFiltering(l, true), "bridge vlan_filtering")
}

// setVLAN makes vid the port's PVID, untagged, and takes the other VLANs
// off it, so that the port sees only its own VLAN.
func (s *session) setVLAN(port netlink.Link, vid int, remove []int) error {
	if err := s.host.BridgeVlanAdd(port, uint16(vid), true, true, false, true); err != nil {
		return fmt.Errorf("add vlan %d: %w", vid, err)
	}
	for _, r := range remove {
		if err := ignore(s.host.BridgeVlanDel(port, uint16(r), false, false, false, true), unix.ENOENT); err != nil {
			return fmt.Errorf("remove vlan %d: %w", r, err)
		}
	}
	return nil
}

// addAddress adds an address without duplicate address detection: the IPAM
// already made it unique, and DAD would keep an IPv6 address unusable
// ("tentative") for about a second after the pod started.
func (s *session) addAddress(l netlink.Link, a net.IPNet) error {
	addr := &netlink.Addr{IPNet: &a}
	if a.IP.To4() == nil {
		addr.Flags = unix.IFA_F_NODAD
	}
	return ignore(s.pod.AddrAdd(l, addr), unix.EEXIST)
}

func (s *session) delAddress(l netlink.Link, a net.IPNet) error {
	return ignore(s.pod.AddrDel(l, &netlink.Addr{IPNet: &a}), unix.EADDRNOTAVAIL)
}

// podRoute is a route through l in its table (a VRF's, or main), marked
// with podnet's protocol.
func podRoute(l netlink.Link, r Route) *netlink.Route {
	dst := r.Dst
	route := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: &dst, Gw: r.Gateway, Protocol: routeProtocol, Table: int(r.Table)}
	if r.Gateway == nil {
		route.Scope = netlink.SCOPE_LINK
	}
	return route
}

// deletePodLink deletes a pod link, or gives a host device back to the
// node; one that is already gone is fine.
func (s *session) deletePodLink(name string) error {
	delete(s.links, name)
	// A veth takes its node end along.
	delete(s.ports, hostName(s.uid, name))
	l, err := linkByName(s.pod, name)
	if err != nil || l == nil {
		return err
	}
	if o, ok := originOf(l.Attrs().AltNames); ok {
		return s.giveBack(l, o)
	}
	return ignore(s.pod.LinkDel(l), unix.ENODEV)
}

// deletePort deletes a node veth end, but only one marked as this pod's;
// deleted says whether there was one to delete.
func (s *session) deletePort(name, ifname string) (deleted bool, err error) {
	delete(s.ports, name)
	l, err := linkByName(s.host, name)
	if err != nil || l == nil {
		return false, err
	}
	if l.Attrs().Alias != portAlias(s.uid, ifname) {
		return false, fmt.Errorf("node link %q is not marked as podnet's and is left alone", name)
	}
	return true, ignore(s.host.LinkDel(l), unix.ENODEV)
}

// deleteBridgeIfUnused deletes a bridge podnet created once no pod port is
// left in it, together with its VLAN uplink or VXLAN device if it has one;
// a host interface that was its uplink is released, never deleted. The
// caller holds bridgeMu, so no pod joins it meanwhile.
func (d *Dataplane) deleteBridgeIfUnused(h *netlink.Handle, hostNS netns.NsHandle, name string) (bool, error) {
	br, err := linkByName(h, name)
	if err != nil || br == nil {
		return false, err
	}
	spanPort, ok := parseBridgeAlias(br.Attrs().Alias)
	if !ok {
		return false, nil
	}
	// In use means it has a port other than its own uplink or VXLAN
	// device. IFF_RUNNING says nothing here: it follows the operational
	// state, which the kernel updates lazily from its link watch work, so
	// right after the last port left it is still set. IFF_LOWER_UP is the
	// bridge's carrier itself, which the kernel sets and clears as ports
	// start and stop forwarding: with it a port is there, and the dump of
	// the ports (hundreds, on a busy node) is not needed. A VLAN or
	// spanning network's bridge has carrier through its own port alone, so
	// its ports are always read.
	if br.Attrs().RawFlags&unix.IFF_LOWER_UP != 0 && !strings.HasPrefix(name, vlanBridgePrefix) && spanPort == "" {
		return false, nil
	}
	// The kernel filters the dump by master: only this bridge's ports come
	// back.
	ports, err := dumpLinks(hostNS, "", br.Attrs().Index)
	if err != nil {
		return false, err
	}
	own := func(p linkHead) bool { return p.alias == uplinkAlias || p.alias == vxlanAlias || p.name == spanPort }
	for _, p := range ports {
		if !own(p) {
			return false, nil
		}
	}
	for _, p := range ports {
		if p.alias != uplinkAlias && p.alias != vxlanAlias {
			// An admin's interface, made the uplink: released.
			err := ignore(h.LinkSetNoMaster(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: p.index}}), unix.ENODEV)
			if err != nil {
				return false, fmt.Errorf("uplink %q: release: %w", p.name, err)
			}
			continue
		}
		if err := ignore(h.LinkDel(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: p.index}}), unix.ENODEV); err != nil {
			return false, fmt.Errorf("uplink %q: delete: %w", p.name, err)
		}
	}
	d.bridgesChanged.Add(1)
	if err := ignore(h.LinkDel(br), unix.ENODEV); err != nil {
		return false, err
	}
	return true, nil
}

// ignore treats one errno as success: deleting what is gone, adding what is
// there.
func ignore(err error, errno unix.Errno) error {
	if errors.Is(err, errno) {
		return nil
	}
	return err
}
