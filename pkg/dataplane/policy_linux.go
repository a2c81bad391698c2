package dataplane

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"

	"podnet.io/podnet/pkg/portsecurity"
)

// Network policy: an interface's PolicyIn and PolicyOut are elements of
// the policy table in the pod's netns (portsecurity.PolicyConn), keyed by
// the link's name there, so every kind gets it the same way and the pod,
// without NET_ADMIN, cannot change it. Apply writes what changed before
// any step runs, so a new link is filtered before it first goes up, and
// removes the elements of interfaces whose policy went (or that went)
// after the steps. The Dataplane remembers a fingerprint of each link's
// policy per pod, so an Apply whose policies did not change sends no
// nftables request; that memory is its belief, as port security's is.
// A pod that never had a policy never gets the table.

// podPolicy is what the Dataplane wrote into one pod's policy table.
type podPolicy struct {
	mu sync.Mutex
	// netns identifies the pod's netns (device and inode): a new sandbox
	// of the pod starts from nothing.
	netns string
	conn  portsecurity.PolicyConn
	// written are the fingerprints of the links' policies in the table,
	// by link name; "" for one found in the table, of unknown policy.
	written map[string]string
	// known: written is all the table holds, because this Dataplane
	// read the table, wrote it, or found a new netns (none of podnet's
	// links in it) with nothing to write.
	known bool
}

// podPolicy is the pod's memory for its netns, new when the pod or its
// netns is new to the Dataplane.
func (d *Dataplane) podPolicy(uid, netns string) *podPolicy {
	d.policyMu.Lock()
	defer d.policyMu.Unlock()
	if d.policies == nil {
		d.policies = map[string]*podPolicy{}
	}
	pp := d.policies[uid]
	if pp == nil || pp.netns != netns {
		if pp != nil {
			// A new sandbox: the old one's socket holds its netns.
			pp.mu.Lock()
			pp.conn.Close()
			pp.mu.Unlock()
		}
		pp = &podPolicy{netns: netns, written: map[string]string{}}
		d.policies[uid] = pp
	}
	return pp
}

// takePolicy forgets the pod's memory and returns it (nil if none).
func (d *Dataplane) takePolicy(uid string) *podPolicy {
	d.policyMu.Lock()
	defer d.policyMu.Unlock()
	pp := d.policies[uid]
	delete(d.policies, uid)
	if pp != nil {
		pp.mu.Lock()
		pp.conn.Close()
		pp.mu.Unlock()
	}
	return pp
}

// forgetPolicies forgets the memory of pods that are not live.
func (d *Dataplane) forgetPolicies(live func(uid string) bool) {
	d.policyMu.Lock()
	defer d.policyMu.Unlock()
	for uid, pp := range d.policies {
		if !live(uid) {
			pp.mu.Lock()
			pp.conn.Close()
			pp.mu.Unlock()
			delete(d.policies, uid)
		}
	}
}

// reset forgets what was written: after a failed write the table is read
// again by the next Apply.
func (pp *podPolicy) reset() {
	pp.conn.Close()
	pp.conn = portsecurity.PolicyConn{}
	pp.written = map[string]string{}
	pp.known = false
}

// read learns the links the table holds a policy of (no request when the
// connection wrote or read it already); the table is not made.
func (pp *podPolicy) read(d *Dataplane, netns int) error {
	pp.conn.NetNS = netns
	d.policyCalls.Add(1)
	ports, err := pp.conn.Ports()
	if err != nil {
		return err
	}
	for _, port := range ports {
		if _, ok := pp.written[port]; !ok {
			pp.written[port] = ""
		}
	}
	pp.known = true
	return nil
}

// writePolicies writes, in one transaction and before any step, the
// policies of the desired interfaces that differ from what was written.
// When that fails the interfaces are failed: their steps are left out, and
// those of their links that are up are set down (fail closed).
func (s *session) writePolicies(p Pod, steps []Step, failed map[string]bool) ([]Step, error) {
	s.policy = s.d.podPolicy(p.UID, s.podNS.UniqueId())
	pp := s.policy
	pp.mu.Lock()
	defer pp.mu.Unlock()
	var put []portsecurity.PolicyPort
	var fingerprints []string
	var refused []string
	var refusals []error
	for _, ifc := range p.Interfaces {
		if err := ifc.enforceable(); err != nil {
			refused, refusals = append(refused, ifc.Name), append(refusals, err)
			continue
		}
		if !ifc.isolated() {
			continue
		}
		port := ifc.policyPort()
		if fp := policyFingerprint(port); pp.written[ifc.Name] != fp {
			put = append(put, port)
			fingerprints = append(fingerprints, fp)
		}
	}
	if len(refused) > 0 {
		steps = s.keepDown(steps, refused, failed)
		refusals = append(refusals, s.setDown(refused))
	}
	if len(put) == 0 {
		return steps, errors.Join(refusals...)
	}
	pp.conn.NetNS = int(s.podNS)
	s.d.policyCalls.Add(1)
	err := pp.conn.Ensure(put...)
	if err == nil {
		for i, port := range put {
			pp.written[port.Port] = fingerprints[i]
		}
		if pp.known {
			return steps, errors.Join(refusals...)
		}
		if err = pp.read(s.d, int(s.podNS)); err == nil {
			return steps, errors.Join(refusals...)
		}
	}
	pp.reset()
	var names []string
	for _, port := range put {
		names = append(names, port.Port)
	}
	steps = s.keepDown(steps, names, failed)
	err = errors.Join(err, s.setDown(names))
	return steps, errors.Join(append(refusals, fmt.Errorf("interfaces %s: network policy: %w", strings.Join(names, ", "), err))...)
}

// keepDown fails the named interfaces and leaves their steps out.
func (s *session) keepDown(steps []Step, names []string, failed map[string]bool) []Step {
	for _, name := range names {
		failed[name] = true
	}
	return slices.DeleteFunc(steps, func(st Step) bool { return slices.Contains(names, st.Interface) })
}

// setDown sets down those of the pod links that are up.
func (s *session) setDown(names []string) error {
	var errs []error
	for _, name := range names {
		if ls, ok := s.planned.Links[name]; ok && ls.Up {
			errs = append(errs, s.withPodLink(name, func(l netlink.Link) error { return s.pod.LinkSetDown(l) }))
		}
	}
	return errors.Join(errs...)
}

// prunePolicies removes, after the steps, the policies of the links that
// have none now: interfaces whose policy went, and those that went. An
// interface that failed keeps what it had until an Apply gets through.
func (s *session) prunePolicies(p Pod, failed map[string]bool) error {
	pp := s.policy
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if !pp.known {
		if s.firstAttach && len(pp.written) == 0 {
			// A netns without podnet's links, to which nothing was
			// written: a new sandbox, whose table podnet never made.
			pp.known = true
			return nil
		}
		if err := pp.read(s.d, int(s.podNS)); err != nil {
			pp.reset()
			return fmt.Errorf("network policy: %w", err)
		}
	}
	var gone []string
	for name := range pp.written {
		keep := failed[name] || slices.ContainsFunc(p.Interfaces, func(ifc Interface) bool { return ifc.Name == name && ifc.isolated() })
		if !keep {
			gone = append(gone, name)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	slices.Sort(gone)
	pp.conn.NetNS = int(s.podNS)
	s.d.policyCalls.Add(1)
	if err := pp.conn.Remove(gone...); err != nil {
		pp.reset()
		return fmt.Errorf("interfaces %s: remove network policy: %w", strings.Join(gone, ", "), err)
	}
	for _, name := range gone {
		delete(pp.written, name)
	}
	return nil
}

// deletePolicies removes the pod's policy table at detach, every podnet
// link of the pod being gone; a pod known to have none costs no request.
func (s *session) deletePolicies(pp *podPolicy) error {
	if pp != nil && pp.netns == s.podNS.UniqueId() {
		pp.mu.Lock()
		none := pp.known && len(pp.written) == 0
		pp.mu.Unlock()
		if none {
			return nil
		}
	}
	if err := portsecurity.DeletePolicyTable(int(s.podNS)); err != nil {
		return fmt.Errorf("network policy: %w", err)
	}
	return nil
}
