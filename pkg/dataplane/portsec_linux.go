package dataplane

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"

	"podnet.io/podnet/pkg/nldump"
	"podnet.io/podnet/pkg/portsecurity"
)

// Port security: the node end of a bridge or vlan kind interface forwards
// only the pod link's own MAC and addresses (package portsecurity). Its
// rules are written right before the port goes up, so no port ever
// forwards unfiltered; brought up to date after every Apply (a changed MAC,
// address or link-local); and removed when the port goes (Apply, Detach,
// CollectGarbage). Ports and rules are matched by the node end's name.

// portRulesConn is what the Dataplane keeps of the port-security table.
type portRulesConn = *portsecurity.Conn

// portRules is the node's port-security table, on a connection the
// Dataplane keeps until Close: closing one after a write waits for the
// kernel's RCU grace period (portsecurity.Conn), which was most of an
// attach's time.
func (d *Dataplane) portRules(hostNS int) *portsecurity.Conn {
	d.hostMu.Lock()
	defer d.hostMu.Unlock()
	if d.nft == nil {
		d.nft = portsecurity.Table{NetNS: hostNS}.Lasting()
	}
	return d.nft
}

// portUp writes the port's rules, then sets the port up.
func (s *session) portUp(st Step) error {
	ifc, ok := s.want[st.Interface]
	if !ok {
		return fmt.Errorf("no desired interface %q to secure the port for", st.Interface)
	}
	if err := s.securePort(ifc); err != nil {
		return fmt.Errorf("port security: %w", err)
	}
	return s.withPort(st.Node, s.host.LinkSetUp)
}

// securePort makes the rules of an interface's port match the pod link as
// it is now: its MAC, the desired addresses and its link-local ones; or
// removes them when the interface turns port security off.
func (s *session) securePort(ifc Interface) error {
	port := hostName(s.uid, ifc.Name)
	table := s.d.portRules(int(s.hostNS))
	s.d.portsMu.RLock()
	defer s.d.portsMu.RUnlock()
	if ifc.PortSecurityDisabled {
		return table.Remove(port)
	}
	l, err := s.pod.LinkByName(ifc.Name)
	if err != nil {
		return fmt.Errorf("read pod link: %w", err)
	}
	p := portsecurity.Port{Name: port, MAC: l.Attrs().HardwareAddr}
	for _, a := range ifc.Addresses {
		p.Addresses = append(p.Addresses, a.IP)
	}
	addrs, err := nldump.Addrs(s.pod, l, netlink.FAMILY_V6)
	if err != nil {
		return fmt.Errorf("read pod link addresses: %w", err)
	}
	for _, a := range addrs {
		if a.IP.IsLinkLocalUnicast() {
			p.LinkLocal = append(p.LinkLocal, a.IP)
		}
	}
	pl, err := portsecurity.PlanPort(p)
	if err != nil {
		return err
	}
	_, err = table.Ensure(pl)
	return err
}

// securePorts brings the rules of the pod's ports up to date after an
// Apply: the desired interfaces' ports that exist get theirs (an
// interface whose rules cannot be written counts as failed, and its port
// is set down), and the ports
// this Apply deleted, or that are not there, lose theirs.
func (s *session) securePorts(p Pod, steps []Step, failed map[string]bool) error {
	var gone []string
	var joined []error
	kept := map[string]bool{}
	for _, ifc := range p.Interfaces {
		if !hasPort(ifc.Kind) {
			continue
		}
		port := hostName(s.uid, ifc.Name)
		l, err := linkByName(s.host, port)
		if err != nil {
			joined = append(joined, fmt.Errorf("interface %q: port security: node link %q: %w", ifc.Name, port, err))
			continue
		}
		if l == nil {
			gone = append(gone, port)
			continue
		}
		kept[port] = true
		if err := s.securePort(ifc); err != nil {
			// Fail closed: a port whose rules could not be written
			// forwards nothing rather than something unchecked.
			failed[ifc.Name] = true
			joined = append(joined, fmt.Errorf("interface %q: port security: %w", ifc.Name, errors.Join(err, s.host.LinkSetDown(l))))
		}
	}
	for _, st := range steps {
		if (st.Op == OpDelete || st.Op == OpDeletePort) && !kept[hostName(s.uid, st.Interface)] {
			gone = append(gone, hostName(s.uid, st.Interface))
		}
	}
	return errors.Join(append(joined, s.d.removePortRules(int(s.hostNS), gone...))...)
}

// removePortRules removes the rules of ports that are gone.
func (d *Dataplane) removePortRules(hostNS int, ports ...string) error {
	if len(ports) == 0 {
		return nil
	}
	d.portsMu.RLock()
	defer d.portsMu.RUnlock()
	if err := d.portRules(hostNS).Remove(ports...); err != nil {
		return fmt.Errorf("port security: %w", err)
	}
	return nil
}

// pruneRules removes the rules of every port that no longer exists: ports
// deleted while the agent was down, or whose removal failed. It holds
// portsMu exclusively, so that no port gets its rules between the check
// and the removal.
func (d *Dataplane) pruneRules(host *netlink.Handle, hostNS int) ([]string, error) {
	d.portsMu.Lock()
	defer d.portsMu.Unlock()
	table := d.portRules(hostNS)
	ports, err := table.Ports()
	if err != nil {
		return nil, fmt.Errorf("port security: %w", err)
	}
	var gone []string
	for _, port := range ports {
		l, err := linkByName(host, port)
		if err != nil {
			return nil, fmt.Errorf("port security: node link %q: %w", port, err)
		}
		if l == nil {
			gone = append(gone, port)
		}
	}
	if err := table.Remove(gone...); err != nil {
		return nil, fmt.Errorf("port security: %w", err)
	}
	return gone, nil
}
