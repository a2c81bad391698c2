package dataplane

import (
	"errors"
	"fmt"
	"net"

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
	facts, err := s.podLinkFacts(ifc.Name)
	if err == nil {
		err = s.securePort(ifc, facts)
	}
	if err != nil {
		return fmt.Errorf("port security: %w", err)
	}
	return s.setNodeLink(st.Node, true, s.portMarks(st.Interface)...)
}

// podFacts is what a port's rules take from its pod link besides the
// desired addresses: its MAC and its IPv6 link-local addresses.
type podFacts struct {
	mac       net.HardwareAddr
	linkLocal []net.IP
	// autoconf are the addresses the kernel made from router
	// advertisements (LinkState.Autoconf); allowed only on an interface
	// that asks for SLAAC.
	autoconf []net.IPNet
}

// securedPort is what port security allows the interface to send from:
// its MAC, its desired addresses, its link-local addresses and, with
// SLAAC, the addresses the kernel made from the network's router
// advertisements (which only the network's routers may send).
func securedPort(name string, ifc Interface, facts podFacts) portsecurity.Port {
	p := portsecurity.Port{Name: name, MAC: facts.mac, LinkLocal: facts.linkLocal, Router: ifc.Router}
	for _, a := range ifc.Addresses {
		p.Addresses = append(p.Addresses, a.IP)
	}
	if ifc.SLAAC {
		for _, a := range facts.autoconf {
			p.Addresses = append(p.Addresses, a.IP)
		}
	}
	return p
}

// podLinkFacts reads a pod link's facts. A link this run created and has
// not changed since is not read again: its MAC was read right after its
// creation, and a link never set up has no link-local address (the kernel
// makes one only once the link is up with a carrier).
func (s *session) podLinkFacts(name string) (podFacts, error) {
	if l, ok := s.links[name]; ok && !s.touched[name] && l.Attrs().Flags&net.FlagUp == 0 {
		if _, created := s.created[name]; created {
			return podFacts{mac: l.Attrs().HardwareAddr}, nil
		}
	}
	l, err := s.pod.LinkByName(name)
	if err != nil {
		return podFacts{}, fmt.Errorf("read pod link: %w", err)
	}
	addrs, err := nldump.Addrs(s.pod, l, netlink.FAMILY_V6)
	if err != nil {
		return podFacts{}, fmt.Errorf("read pod link addresses: %w", err)
	}
	facts := podFacts{mac: l.Attrs().HardwareAddr}
	for _, a := range addrs {
		if a.IP.IsLinkLocalUnicast() {
			facts.linkLocal = append(facts.linkLocal, a.IP)
		}
	}
	return facts, nil
}

// securePort makes the rules of an interface's port match the pod link's
// facts and the desired addresses; or removes them when the interface
// turns port security off. Rules this run already wrote or found for the
// same facts are not read again.
func (s *session) securePort(ifc Interface, facts podFacts) error {
	port := hostName(s.uid, ifc.Name)
	table := s.d.portRules(int(s.hostNS))
	s.d.portsMu.RLock()
	defer s.d.portsMu.RUnlock()
	if ifc.PortSecurityDisabled {
		delete(s.secured, port)
		return table.Remove(port)
	}
	pl, err := portsecurity.PlanPort(securedPort(port, ifc, facts))
	if err != nil {
		return err
	}
	if s.secured[port] == pl.Fingerprint {
		return nil
	}
	if _, err := table.Ensure(pl); err != nil {
		return err
	}
	s.secured[port] = pl.Fingerprint
	return nil
}

// securePorts brings the rules of the pod's ports up to date after an
// Apply, from after, the pod as observed at its end: the desired
// interfaces' ports that exist get theirs (an interface whose rules cannot
// be written counts as failed, and its port is set down), and the ports
// this Apply deleted, or that are not there, lose theirs.
func (s *session) securePorts(p Pod, steps []Step, failed map[string]bool, after State) error {
	var gone []string
	var joined []error
	kept := map[string]bool{}
	for _, ifc := range p.Interfaces {
		if !hasPort(ifc.Kind) {
			continue
		}
		port := hostName(s.uid, ifc.Name)
		ls, inPod := after.Links[ifc.Name]
		// A veth's two ends exist together: the node end of a pod link
		// this run secured and still sees is there.
		if _, secured := s.secured[port]; !secured || !inPod {
			l, err := linkByName(s.host, port)
			if err != nil {
				joined = append(joined, fmt.Errorf("interface %q: port security: node link %q: %w", ifc.Name, port, err))
				continue
			}
			if l == nil {
				gone = append(gone, port)
				continue
			}
		}
		kept[port] = true
		facts, err := podFacts{mac: ls.MAC, linkLocal: s.linkLocal[ifc.Name], autoconf: ls.Autoconf}, error(nil)
		if !inPod {
			facts, err = s.podLinkFacts(ifc.Name)
		}
		if err == nil {
			err = s.securePort(ifc, facts)
		}
		if err != nil {
			// Fail closed: a port whose rules could not be written
			// forwards nothing rather than something unchecked.
			failed[ifc.Name] = true
			joined = append(joined, fmt.Errorf("interface %q: port security: %w", ifc.Name, errors.Join(err, s.withPort(port, s.host.LinkSetDown))))
		}
	}
	for _, st := range steps {
		if (st.Op == OpDelete || st.Op == OpDeletePort) && !kept[hostName(s.uid, st.Interface)] {
			gone = append(gone, hostName(s.uid, st.Interface))
		}
	}
	for _, port := range gone {
		delete(s.secured, port)
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

// Port security of macvlan and ipvlan links (kinds with egressSecured):
// the same rules, on the pod link's own egress in the pod's netns
// (portsecurity.Egress), written when the link is created, before it goes
// up, and brought up to date after every Apply. A chain is bound to its
// link by name: one left by a link of that name that is gone is removed
// before a new link gets its rules.

// egress is the pod's egress table.
func (s *session) egress() portsecurity.Egress {
	return portsecurity.Egress{NetNS: int(s.podNS)}
}

// secureEgress makes the rules of a pod link's egress match its facts and
// the desired addresses, or removes them when the interface turns port
// security off. fresh says the link was just created, so rules of an
// earlier link of its name are dropped first.
func (s *session) secureEgress(ifc Interface, facts podFacts, fresh bool) error {
	if ifc.PortSecurityDisabled || fresh {
		if err := s.egress().Remove(ifc.Name); err != nil || ifc.PortSecurityDisabled {
			return err
		}
	}
	pl, err := portsecurity.PlanPort(securedPort(ifc.Name, ifc, facts))
	if err != nil {
		return err
	}
	_, err = s.egress().Ensure(pl)
	return err
}

// secureEgresses brings the egress rules of the pod's macvlan and ipvlan
// links up to date after an Apply, from after, the pod as observed at its
// end. A link whose rules cannot be written counts as failed and is set
// down (fail closed); the rules of links this Apply deleted go.
func (s *session) secureEgresses(p Pod, steps []Step, failed map[string]bool, after State) error {
	var joined []error
	kept := map[string]bool{}
	for _, ifc := range p.Interfaces {
		ls, ok := after.Links[ifc.Name]
		if !egressSecured(ifc.Kind) || !ok {
			continue
		}
		kept[ifc.Name] = true
		if err := s.secureEgress(ifc, podFacts{mac: ls.MAC, linkLocal: s.linkLocal[ifc.Name], autoconf: ls.Autoconf}, false); err != nil {
			failed[ifc.Name] = true
			var down error
			if l, lerr := s.pod.LinkByName(ifc.Name); lerr == nil {
				down = s.pod.LinkSetDown(l)
			}
			joined = append(joined, fmt.Errorf("interface %q: port security: %w", ifc.Name, errors.Join(err, down)))
		}
	}
	var gone []string
	for _, st := range steps {
		// A delete step does not say the link's kind: Remove leaves
		// names without rules alone.
		if st.Op == OpDelete && !kept[st.Interface] {
			gone = append(gone, st.Interface)
		}
	}
	if len(gone) > 0 {
		if err := s.egress().Remove(gone...); err != nil {
			joined = append(joined, fmt.Errorf("port security: %w", err))
		}
	}
	return errors.Join(joined...)
}
