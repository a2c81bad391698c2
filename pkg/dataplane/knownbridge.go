package dataplane

// A podnet bridge is read by name once and then known: each further
// attach into it would otherwise look it up again, a request per
// interface that the kernel answers with the bridge's whole link message.
// What is known of it stays true while no podnet bridge is deleted or
// given VLAN filtering (the Dataplane's bridgesChanged count, moved under
// bridgeMu before each change). The index of a deleted bridge is not
// handed out again (the kernel allocates indexes cyclically), so a create
// into a bridge someone else deleted fails instead of landing elsewhere:
// createVeth then forgets it and goes through ensureBridge, and an Apply
// that fails for any other reason forgets every known bridge. Only
// bridges with podnet's alias are known: an admin's bridge is the admin's
// to change, and is read each time.

// knownBridge is what a plan read of one podnet bridge, and the
// Dataplane's count of changed bridges when it began to read.
type knownBridge struct {
	state   NodeLinkState
	changed uint64
}

// knownBridge returns the state of the podnet bridge name as an earlier
// plan read it, while no podnet bridge changed since.
func (d *Dataplane) knownBridge(name string) (NodeLinkState, bool) {
	d.knownMu.Lock()
	defer d.knownMu.Unlock()
	k, ok := d.known[name]
	if !ok || k.changed != d.bridgesChanged.Load() {
		return NodeLinkState{}, false
	}
	return k.state, true
}

// rememberBridge keeps what a plan that began at the count changed read
// of the node link name, when it is a podnet bridge.
func (d *Dataplane) rememberBridge(name string, st NodeLinkState, changed uint64) {
	if !st.Bridge || !st.Owned {
		return
	}
	d.knownMu.Lock()
	defer d.knownMu.Unlock()
	if d.known == nil {
		d.known = map[string]knownBridge{}
	}
	d.known[name] = knownBridge{state: st, changed: changed}
}

// forgetBridges makes the next plans read the named bridges again; no
// name forgets them all.
func (d *Dataplane) forgetBridges(names ...string) {
	d.knownMu.Lock()
	defer d.knownMu.Unlock()
	if len(names) == 0 {
		clear(d.known)
	}
	for _, n := range names {
		delete(d.known, n)
	}
}
