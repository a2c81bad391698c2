package dataplane

import (
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// observePod reads the pod side: podnet's links with their addresses and
// podnet routes, the names of all other links, and eth0's MTU.
func (s *session) observePod() (State, error) {
	st := State{Links: map[string]LinkState{}, Foreign: map[string]bool{}, VRFs: map[string]VRFState{}}
	s.linkLocal = map[string][]net.IP{}
	s.mainDefaults = nil
	dump, err := s.podLinks()
	if err != nil {
		return st, fmt.Errorf("list links: %w", err)
	}
	st.PrimaryMTU = dump.primaryMTU
	for _, name := range dump.foreign {
		st.Foreign[name] = true
	}
	byIndex := map[int]string{}
	vrfs, masters := map[int]string{}, map[string]int{}
	for _, l := range dump.links {
		a := l.Attrs()
		if v, ok := l.(*netlink.Vrf); ok {
			vrfs[a.Index] = a.Name
			observeVRF(v, &st)
			continue
		}
		marked := isPodAlias(a.Alias, a.Name)
		_, hostDevice := originOf(a.AltNames)
		if !marked && !hostDevice && a.Alias != checkingAlias(a.Name) && !s.isUnfinishedVeth(l) {
			st.Foreign[a.Name] = true
			continue
		}
		s.links[a.Name] = l
		byIndex[a.Index] = a.Name
		ls := linkState(l)
		if hostDevice {
			s.observeTaken(l, &ls)
		}
		// A link podnet stopped building (not marked, or still being
		// checked, or a veth marked but not in podnet's group yet) is made
		// anew.
		ls.Unfinished = !marked || (linuxKinds[ls.Kind].hasPeer && a.Group != podGroup)
		if read := linuxKinds[ls.Kind].readTunnel; read != nil && marked {
			if ls.Tunnel, err = read(s, l); err != nil {
				return st, err
			}
		}
		st.Links[a.Name] = ls
		masters[a.Name] = a.MasterIndex
	}
	for name, idx := range masters {
		if vrf, ok := vrfs[idx]; ok && idx != 0 {
			ls := st.Links[name]
			ls.VRF = vrf
			st.Links[name] = ls
		}
	}
	if len(st.Links) == 0 {
		return st, nil
	}
	addrs, err := addrList(s.pod)
	if err != nil {
		return st, fmt.Errorf("list addresses: %w", err)
	}
	for _, a := range addrs {
		name, ok := byIndex[a.LinkIndex]
		if !ok {
			continue
		}
		if a.IP.To4() == nil && a.IP.IsLinkLocalUnicast() {
			s.linkLocal[name] = append(s.linkLocal[name], a.IP)
			continue
		}
		ls := st.Links[name]
		if a.Flags&unix.IFA_F_PERMANENT == 0 {
			// Made by the kernel from a router advertisement, with
			// lifetimes: neither podnet's to keep nor to remove. One
			// still in duplicate address detection is not usable yet.
			if a.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) == 0 {
				ls.Autoconf = append(ls.Autoconf, *a.IPNet)
				st.Links[name] = ls
			}
			continue
		}
		ls.Addresses = append(ls.Addresses, *a.IPNet)
		st.Links[name] = ls
	}
	// One dump of every table gives podnet's routes and, for the default
	// route step after an Apply, the main table's default routes.
	all, err := allRouteList(s.pod)
	if err != nil {
		return st, fmt.Errorf("list routes: %w", err)
	}
	s.mainDefaults = map[int][]netlink.Route{netlink.FAMILY_V4: nil, netlink.FAMILY_V6: nil}
	var routes []netlink.Route
	for _, r := range all {
		if r.Table == unix.RT_TABLE_MAIN && isDefault(r) {
			s.mainDefaults[r.Family] = append(s.mainDefaults[r.Family], r)
		}
		if r.Protocol == routeProtocol {
			routes = append(routes, r)
		}
	}
	for _, r := range routes {
		name, ok := byIndex[r.LinkIndex]
		if !ok {
			continue
		}
		ls := st.Links[name]
		ls.Routes = append(ls.Routes, Route{Dst: ipNet(r.Dst, r.Family), Gateway: r.Gw, Table: tableOf(r)})
		st.Links[name] = ls
	}
	return st, nil
}

// linkState translates one pod link into the planner's terms.
func linkState(l netlink.Link) LinkState {
	a := l.Attrs()
	ls := LinkState{
		Up:          a.Flags&net.FlagUp != 0,
		MTU:         a.MTU,
		MAC:         a.HardwareAddr,
		ParentIndex: a.ParentIndex,
	}
	ls.Kind = Kind(l.Type())
	for k, lk := range linuxKinds {
		if lk.linkType != l.Type() || podKind(k) != k {
			continue
		}
		ls.Kind = k
		if lk.readMode != nil {
			ls.Mode = lk.readMode(l)
		}
		if lk.hasPeer {
			ls.ParentIndex = 0 // the peer, not a parent
		}
	}
	return ls
}

// observeNode reads the node links that the desired interfaces and the
// observed pod links refer to, one lookup by name each (no dump), so the
// cost does not grow with the number of pods on the node.
func (s *session) observeNode(p Pod, st *State) error {
	st.Ports = map[string]PortState{}
	st.NodeLinks = map[string]NodeLinkState{}
	s.bridgesChangedAtPlan = s.d.bridgesChanged.Load()
	portMasters := map[string]int{}
	addPort := func(ifname string) error {
		name := hostName(s.uid, ifname)
		if _, done := st.Ports[name]; done {
			return nil
		}
		l, err := linkByName(s.host, name)
		if err != nil || l == nil {
			return err
		}
		a := l.Attrs()
		s.ports[name] = l
		st.Ports[name] = PortState{Up: a.Flags&net.FlagUp != 0, MTU: a.MTU, Alias: a.Alias}
		if a.MasterIndex != 0 {
			portMasters[name] = a.MasterIndex
		}
		return nil
	}
	// A link some interface uses as its parent or tunnel device is read
	// each time, for its MTU (a bridge's follows its ports); a podnet
	// bridge that only takes ports is read once (knownbridge.go).
	parents := map[string]bool{}
	for _, ifc := range p.Interfaces {
		parents[ifc.Master], parents[tunnelDev(ifc)] = true, true
	}
	addNodeLink := func(name string) error {
		if _, done := st.NodeLinks[name]; done || name == "" {
			return nil
		}
		nls, known := s.d.knownBridge(name)
		if !known || parents[name] {
			l, err := linkByName(s.host, name)
			if err != nil || l == nil {
				return err
			}
			nls = nodeLinkState(l)
			if !parents[name] {
				s.d.rememberBridge(name, nls, s.bridgesChangedAtPlan)
			}
		}
		st.NodeLinks[name] = nls
		if nls.Bridge {
			s.bridges[name] = nls.Index
		}
		return nil
	}
	// The node ends of the pod links the pod has; one whose pod end is
	// not there is found by create, if it holds the name (deleteLeftNodeEnd).
	for name, ls := range st.Links {
		if hasPort(ls.Kind) {
			if err := addPort(name); err != nil {
				return fmt.Errorf("interface %q: read node end: %w", name, err)
			}
		}
	}
	for _, ifc := range p.Interfaces {
		err := addNodeLink(nodeBridge(ifc))
		if err == nil {
			err = addNodeLink(ifc.Master)
		}
		if err == nil {
			err = addNodeLink(tunnelDev(ifc))
		}
		if err != nil {
			return fmt.Errorf("interface %q: read node links: %w", ifc.Name, err)
		}
	}
	if err := s.resolveMasters(st, portMasters); err != nil {
		return err
	}
	return s.observePortVLANs(st)
}

// resolveMasters names the bridge of each port, reading bridges that no
// desired interface named (a port that moved, or one about to be removed).
func (s *session) resolveMasters(st *State, portMasters map[string]int) error {
	for port, idx := range portMasters {
		name := ""
		for n, nl := range st.NodeLinks {
			if nl.Index == idx {
				name = n
			}
		}
		if name == "" {
			l, err := s.host.LinkByIndex(idx)
			if err != nil && !isNotFound(err) {
				return fmt.Errorf("node link %q: read its bridge: %w", port, err)
			}
			if l != nil {
				name = l.Attrs().Name
				st.NodeLinks[name] = nodeLinkState(l)
			}
		}
		ps := st.Ports[port]
		ps.Master = name
		st.Ports[port] = ps
	}
	return nil
}

// observePortVLANs reads the bridge VLANs of ports whose bridge filters. It
// dumps, so it runs only when such a bridge is involved.
func (s *session) observePortVLANs(st *State) error {
	needed := false
	for _, ps := range st.Ports {
		if st.NodeLinks[ps.Master].VLANFiltering {
			needed = true
		}
	}
	if !needed {
		return nil
	}
	vlans, err := bridgeVLANList(s.host)
	if err != nil {
		return fmt.Errorf("list bridge vlans: %w", err)
	}
	for name, ps := range st.Ports {
		if !st.NodeLinks[ps.Master].VLANFiltering {
			continue
		}
		l, err := linkByName(s.host, name)
		if err != nil || l == nil {
			return err
		}
		ps.VIDs = nil
		for _, v := range vlans[int32(l.Attrs().Index)] {
			ps.VIDs = append(ps.VIDs, v.vid)
			if v.pvid {
				ps.PVID = v.vid
			}
		}
		st.Ports[name] = ps
	}
	return nil
}

func nodeLinkState(l netlink.Link) NodeLinkState {
	a := l.Attrs()
	nl := NodeLinkState{Index: a.Index, MTU: a.MTU}
	if br, ok := l.(*netlink.Bridge); ok {
		nl.Bridge = true
		nl.Owned = isBridgeAlias(a.Alias)
		nl.VLANFiltering = br.VlanFiltering != nil && *br.VlanFiltering
	}
	return nl
}
