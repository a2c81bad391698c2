package dataplane

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Apply makes the pod's secondary networking match p: it creates what is
// missing, changes in place what differs, and removes podnet interfaces in
// the pod that p no longer lists. Applying the same Pod again changes
// nothing. Errors of single interfaces are joined; the returned statuses
// cover the desired interfaces that are in place.
func (d *Dataplane) Apply(ctx context.Context, p Pod) ([]InterfaceStatus, error) {
	var out []InterfaceStatus
	err := d.onPod(p, func(s *session) error {
		steps, failed, err := s.plan(p)
		if failed == nil {
			return err
		}
		errs := []error{err}
		s.want = map[string]Interface{}
		for _, ifc := range p.Interfaces {
			s.want[ifc.Name] = ifc
		}
		// Before any step: no link goes up unfiltered.
		steps, err = s.writePolicies(p, steps, failed)
		errs = append(errs, err)
		execFailed, err := s.execute(ctx, steps)
		errs = append(errs, err)
		for name := range execFailed {
			failed[name] = true
		}
		errs = append(errs, s.prunePolicies(p, failed))
		s.awaitIPv6(ctx, p, steps, failed)
		errs = append(errs, s.checkWire(ctx, p, steps, failed))
		errs = append(errs, s.awaitSLAAC(ctx, p, failed))
		after, built := s.asBuilt(p, failed)
		switch {
		case built:
		case len(steps) == 0 && !slices.ContainsFunc(p.Interfaces, func(ifc Interface) bool { return ifc.SLAAC }):
			// Nothing was changed: the plan's read, a moment ago, is
			// the pod (the agent's reconciles of a running pod, and
			// every resync, end here). A router advertisement may have
			// given a SLAAC interface its address since.
			after = s.planned
		default:
			if after, err = s.observePod(); err != nil {
				errs = append(errs, fmt.Errorf("read back: %w", err))
			}
		}
		// The pod's read also gives port security the pod links' MACs
		// and link-local addresses.
		errs = append(errs, s.securePorts(p, steps, failed, after))
		errs = append(errs, s.secureEgresses(p, steps, failed, after))
		if !built {
			errs = append(errs, s.ensureDefaultRoutes(p, failed))
		}
		out = statuses(p, after, failed)
		return errors.Join(errs...)
	})
	if err != nil {
		// A bridge known from an earlier plan may be why (knownbridge.go).
		d.forgetBridges()
	}
	return out, err
}

// asBuilt is the pod as this run built it, when the run was a first attach
// that went as planned: the plan found none of podnet's links in the pod,
// every desired interface is a veth this run created, with neither a VRF,
// a default gateway nor SLAAC, and nothing failed. The kernel acknowledged every
// step, so the links are the desired ones with the MTU and MAC read right
// after each was created, and a read back (three dumps) would only say so
// again. Otherwise built is false and the pod is read back.
//
// Port security then allows the EUI-64 link-local address of the pod
// link's MAC, the one a pod netns makes by default; a pod netns set to make
// another kind gets that one allowed from its next Apply's read back. The
// default routes are left as they are: podnet's goes with its link, and a
// route it demoted is only left demoted by a run that stopped between
// deleting podnet's last link and putting the route back, which the next
// Apply that reads back does.
func (s *session) asBuilt(p Pod, failed map[string]bool) (after State, built bool) {
	if !s.firstAttach || len(failed) > 0 || len(p.Interfaces) == 0 {
		return State{}, false
	}
	after.Links = map[string]LinkState{}
	for _, ifc := range p.Interfaces {
		l, known := s.links[ifc.Name]
		_, created := s.created[ifc.Name]
		if !known || !created || !linuxKinds[ifc.Kind].hasPeer || ifc.VRF != nil || len(ifc.DefaultGateways) > 0 || ifc.SLAAC {
			return State{}, false
		}
		a := l.Attrs()
		after.Links[ifc.Name] = LinkState{Kind: ifc.Kind, Up: true, MTU: a.MTU, MAC: a.HardwareAddr, Addresses: ifc.Addresses}
	}
	return after, true
}

// Plan returns the steps Apply would take now, without taking them.
func (d *Dataplane) Plan(ctx context.Context, p Pod) ([]Step, error) {
	var steps []Step
	err := d.onPod(p, func(s *session) error {
		var err error
		steps, _, err = s.plan(p)
		return err
	})
	return steps, err
}

// Observe reports the pod's desired interfaces that are in place, without
// changing anything.
func (d *Dataplane) Observe(ctx context.Context, p Pod) ([]InterfaceStatus, error) {
	var out []InterfaceStatus
	err := d.onPod(p, func(s *session) error {
		st, err := s.observePod()
		out = statuses(p, st, nil)
		return err
	})
	return out, err
}

// onPod runs f on a session in the pod's netns; every error it returns
// names the pod and its netns.
func (d *Dataplane) onPod(p Pod, f func(*session) error) error {
	err := validatePod(p)
	if err == nil {
		var s *session
		if s, err = d.openSession(p.UID, p.NetNS); err == nil {
			err = f(s)
			s.close()
		}
	}
	if err != nil {
		return fmt.Errorf("pod %q netns %q: %w", p.UID, p.NetNS, err)
	}
	return nil
}

// plan observes both sides and plans. A nil failed map with an error means
// nothing could be planned.
func (s *session) plan(p Pod) ([]Step, map[string]bool, error) {
	st, err := s.observePod()
	if err != nil {
		return nil, nil, err
	}
	s.firstAttach = len(st.Links) == 0
	if err := s.observeNode(p, &st); err != nil {
		return nil, nil, err
	}
	if err := s.observeDevices(p, &st); err != nil {
		return nil, nil, err
	}
	s.observeSettings(p, &st)
	s.observeOffloads(p, &st)
	s.planned = st
	return plan(p, st)
}

// Detach removes every podnet interface of the pod: the marked links inside
// its netns (if it still exists; "" or a missing path means it is gone), the
// node ends marked with its UID, and podnet bridges left without ports.
func (d *Dataplane) Detach(ctx context.Context, uid, netnsPath string) error {
	if uid == "" {
		return errors.New("detach: pod uid must not be empty")
	}
	// What was written into the pod's policy table is forgotten: the
	// table goes with the pod's links, or with its netns.
	policy := d.takePolicy(uid)
	exists, err := netnsExists(netnsPath)
	if err != nil {
		err = fmt.Errorf("netns %q: %w", netnsPath, err)
	} else if exists {
		err = d.detachPod(uid, netnsPath, policy)
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrNetNSGone) {
			err = nil
		} else {
			err = fmt.Errorf("pod %q netns %q: %w", uid, netnsPath, err)
		}
	}
	// The netns is gone (or the pod side failed): only the marks on the
	// node are left to go by, and finding them takes a full dump.
	host, hostNS, hostErr := d.hostHandle()
	if hostErr != nil {
		return errors.Join(err, hostErr)
	}
	_, sweepErr := d.removePorts(ctx, host, hostNS, func(portUID string) bool { return portUID != uid })
	if sweepErr != nil {
		sweepErr = fmt.Errorf("pod %q: node side: %w", uid, sweepErr)
	}
	return errors.Join(err, sweepErr)
}

// detachPod deletes the podnet links inside the pod, then whatever is left
// of their node ends, then their bridges if podnet's and empty. It looks up
// the node side by name only, so its cost does not grow with the node.
func (d *Dataplane) detachPod(uid, path string, policy *podPolicy) error {
	s, err := d.openSession(uid, path)
	if err != nil {
		return err
	}
	defer s.close()
	st, err := s.observePod()
	if err != nil {
		return err
	}
	// Read the node ends' bridges before the node ends go.
	p := Pod{UID: uid}
	for _, name := range sortedKeys(st.Links) {
		if hasPort(st.Links[name].Kind) {
			p.Interfaces = append(p.Interfaces, Interface{Name: name, Kind: KindBridge})
		}
	}
	if err := s.observeNode(p, &st); err != nil {
		return err
	}
	if err := deleteGroup(s.podNS); err != nil {
		return fmt.Errorf("delete podnet links: %w", err)
	}
	// podnet's default routes went with their links, and the policy
	// table's elements name none of podnet's links now.
	errs := []error{s.ensureDefaultRoutes(Pod{}, nil), s.deletePolicies(policy)}
	for _, name := range sortedKeys(st.Links) {
		// Gone with the group, unless someone took it out of the group.
		if err := s.deletePodLink(name); err != nil {
			errs = append(errs, fmt.Errorf("interface %q: delete: %w", name, err))
		}
		if !hasPort(st.Links[name].Kind) {
			continue
		}
		if _, err := s.deletePort(hostName(uid, name), name); err != nil {
			errs = append(errs, fmt.Errorf("interface %q: delete node end: %w", name, err))
		}
		if err := d.removePortRules(int(s.hostNS), hostName(uid, name)); err != nil {
			errs = append(errs, fmt.Errorf("interface %q: %w", name, err))
		}
	}
	bridges := map[string]bool{}
	for _, port := range st.Ports {
		if st.NodeLinks[port.Master].Owned {
			bridges[port.Master] = true
		}
	}
	d.bridgeMu.Lock()
	defer d.bridgeMu.Unlock()
	for _, br := range sortedKeys(bridges) {
		if _, err := s.d.deleteBridgeIfUnused(s.host, s.hostNS, br); err != nil {
			errs = append(errs, fmt.Errorf("bridge %q: delete: %w", br, err))
		}
	}
	return errors.Join(errs...)
}

// CollectGarbage forgets the policies written for pods that are not
// live, removes node ends whose pod is not live, then podnet bridges
// without ports, then podnet VLAN uplinks and VXLAN devices in no
// bridge, then the port-security rules of ports that are gone, and gives
// stranded host devices back their node name (RestoreDevices). It returns
// the names of the links it removed or restored.
func (d *Dataplane) CollectGarbage(ctx context.Context, live func(uid string) bool) ([]string, error) {
	host, hostNS, err := d.hostHandle()
	if err != nil {
		return nil, err
	}
	d.forgetPolicies(live)
	removed, err := d.removePorts(ctx, host, hostNS, live)
	uplinks, uplinkErr := removeStrayUplinks(host, hostNS)
	// Rules of ports that are gone, whoever removed the port.
	_, rulesErr := d.pruneRules(host, int(hostNS))
	var restored []string
	var restoreErr error
	if !d.sweptDevices.Swap(true) || d.devicesSeen.Load() {
		// A stranded NIC is one a pod had: looked for once at start (a
		// former agent's), then only once this one has seen host devices.
		restored, restoreErr = d.RestoreDevices()
	}
	return slices.Concat(removed, uplinks, restored), errors.Join(err, uplinkErr, rulesErr, restoreErr)
}

// removePorts deletes the node ends marked for pods that keep says not to
// keep, and then every podnet bridge that has no port left. It sweeps the
// node's veths and bridges, since a pod whose netns is gone can be found no
// other way.
func (d *Dataplane) removePorts(ctx context.Context, host *netlink.Handle, hostNS netns.NsHandle, keep func(uid string) bool) ([]string, error) {
	veths, err := dumpLinks(hostNS, "veth", 0)
	if err != nil {
		return nil, fmt.Errorf("list node veths: %w", err)
	}
	var removed []string
	var errs []error
	for _, l := range veths {
		uid, _, ok := parsePortAlias(l.alias)
		if !ok || keep(uid) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		if err := ignore(host.LinkDel(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: l.index}}), unix.ENODEV); err != nil {
			errs = append(errs, fmt.Errorf("node link %q: delete: %w", l.name, err))
			continue
		}
		removed = append(removed, l.name)
	}
	if err := d.removePortRules(int(hostNS), removed...); err != nil {
		errs = append(errs, err)
	}
	bridges, err := dumpLinks(hostNS, "bridge", 0)
	if err != nil {
		return removed, errors.Join(append(errs, fmt.Errorf("list node bridges: %w", err))...)
	}
	// Re-checked under the lock: a pod may have joined since the dump.
	d.bridgeMu.Lock()
	defer d.bridgeMu.Unlock()
	for _, l := range bridges {
		if !isBridgeAlias(l.alias) {
			continue
		}
		deleted, err := d.deleteBridgeIfUnused(host, hostNS, l.name)
		if err != nil {
			errs = append(errs, fmt.Errorf("bridge %q: delete: %w", l.name, err))
		}
		if deleted {
			removed = append(removed, l.name)
		}
	}
	return removed, errors.Join(errs...)
}

// removeStrayUplinks deletes podnet's VLAN uplinks and VXLAN devices that
// are in no bridge: a run that stopped between creating one and putting it
// into its bridge, or between deleting the bridge and the port, leaves
// them so.
func removeStrayUplinks(host *netlink.Handle, hostNS netns.NsHandle) ([]string, error) {
	var removed []string
	var errs []error
	for kind, alias := range map[string]string{"vlan": uplinkAlias, "vxlan": vxlanAlias} {
		links, err := dumpLinks(hostNS, kind, 0)
		if err != nil {
			errs = append(errs, fmt.Errorf("list node %s links: %w", kind, err))
			continue
		}
		for _, l := range links {
			if l.alias != alias || l.master != 0 {
				continue
			}
			if err := ignore(host.LinkDel(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: l.index}}), unix.ENODEV); err != nil {
				errs = append(errs, fmt.Errorf("%s link %q: delete: %w", kind, l.name, err))
				continue
			}
			removed = append(removed, l.name)
		}
	}
	return removed, errors.Join(errs...)
}
