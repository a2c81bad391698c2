package dataplane

import (
	"errors"
	"fmt"
	"maps"
)

// VRFs inside the pod. An interface that names a VRF is enslaved to a VRF
// device of that name in the pod's netns, which podnet creates (marked,
// in its group, up) with the interface's table; the kernel then moves the
// interface's connected and local routes into that table, and podnet puts
// the interface's own routes there too. The device goes when the last
// podnet interface leaves it. A link of that name podnet did not create is
// never taken over, and a VRF's table, which the kernel cannot change in
// place, is changed by making the device anew.
//
// Enslaving cycles the link (down and up): the kernel flushes the routes
// through it, and IPv6 may drop its addresses. So every change of a link's
// VRF removes podnet's routes from the old table first, then re-adds the
// link's addresses and routes after the move.

// Routing tables no VRF may use: 0 and the kernel's 252-255 (compat,
// default, main, local).
const (
	firstReservedTable = 252
	lastReservedTable  = 255
)

// VRFState is a podnet VRF device inside the pod.
type VRFState struct {
	Table uint32
	Up    bool
	// Unfinished: in podnet's group but not yet marked (podnet stopped
	// while creating it); it is made anew.
	Unfinished bool
}

// vrfName is the VRF an interface wants ("" = none).
func vrfName(ifc Interface) string {
	if ifc.VRF == nil {
		return ""
	}
	return ifc.VRF.Name
}

// validateVRF checks one interface's VRF on its own.
func validateVRF(ifc Interface) []error {
	v := ifc.VRF
	if v == nil {
		return nil
	}
	var errs []error
	if err := validateLinkName(v.Name); err != nil {
		errs = append(errs, fmt.Errorf("vrf name: %w", err))
	} else if reservedName(v.Name) {
		errs = append(errs, fmt.Errorf("vrf name: %q is not a VRF podnet may make", v.Name))
	}
	if v.Table == 0 || (v.Table >= firstReservedTable && v.Table <= lastReservedTable) {
		errs = append(errs, fmt.Errorf("vrf %q table %d: must be within 1-4294967295 and not %d-%d", v.Name, v.Table, firstReservedTable, lastReservedTable))
	}
	if len(ifc.DefaultGateways) > 0 {
		errs = append(errs, fmt.Errorf("vrf %q: an interface in a VRF cannot carry the pod's default route", v.Name))
	}
	return errs
}

// validateVRFs checks the VRFs of the valid interfaces together: one name
// has one table, one table one name, and no VRF is named like an interface
// of the pod. Every interface involved in a clash is moved to invalid.
func validateVRFs(all, valid []Interface, invalid map[string]bool) ([]Interface, error) {
	names := map[string]bool{}
	for _, ifc := range all {
		names[ifc.Name] = true
	}
	tableOf, nameOf := map[string]uint32{}, map[uint32]string{}
	var errs []error
	bad := map[string]bool{}
	for _, ifc := range valid {
		v := ifc.VRF
		if v == nil {
			continue
		}
		switch t, ok := tableOf[v.Name]; {
		case names[v.Name]:
			errs = append(errs, fmt.Errorf("interface %q: vrf %q: an interface of the pod has that name", ifc.Name, v.Name))
		case ok && t != v.Table:
			errs = append(errs, fmt.Errorf("interface %q: vrf %q table %d: another interface gives it table %d", ifc.Name, v.Name, v.Table, t))
		case nameOf[v.Table] != "" && nameOf[v.Table] != v.Name:
			errs = append(errs, fmt.Errorf("interface %q: vrf %q table %d: the table is vrf %q's", ifc.Name, v.Name, v.Table, nameOf[v.Table]))
			bad[nameOf[v.Table]] = true
		default:
			tableOf[v.Name], nameOf[v.Table] = v.Table, v.Name
			continue
		}
		bad[v.Name] = true
	}
	if len(bad) == 0 {
		return valid, nil
	}
	// A clash makes every interface of the VRFs involved invalid: which
	// of them is right is not the dataplane's to guess.
	var kept []Interface
	for _, ifc := range valid {
		if bad[vrfName(ifc)] {
			invalid[ifc.Name] = true
			continue
		}
		kept = append(kept, ifc)
	}
	return kept, errors.Join(errs...)
}

// planVRFs creates the VRF devices the valid interfaces need, makes anew
// those whose table differs (or that are unfinished), and brings them up.
// It returns the state as it is after those steps: the links of a device
// made anew are out of any VRF (the kernel releases them).
func planVRFs(valid []Interface, s State) ([]Step, State) {
	want := map[string]uint32{}
	for _, ifc := range valid {
		if v := ifc.VRF; v != nil && !s.Foreign[v.Name] {
			want[v.Name] = v.Table
		}
	}
	var steps []Step
	released := map[string]bool{}
	for _, name := range sortedKeys(want) {
		cur, ok := s.VRFs[name]
		if ok && (cur.Table != want[name] || cur.Unfinished) {
			steps = append(steps, Step{Op: OpDeleteVRF, VRF: name})
			released[name], ok = true, false
		}
		switch {
		case !ok:
			steps = append(steps, Step{Op: OpCreateVRF, VRF: name, Table: want[name]}, Step{Op: OpVRFUp, VRF: name})
		case !cur.Up:
			steps = append(steps, Step{Op: OpVRFUp, VRF: name})
		}
	}
	if len(released) > 0 {
		links := maps.Clone(s.Links)
		for name, ls := range links {
			if released[ls.VRF] {
				ls.VRF = ""
				links[name] = ls
			}
		}
		s.Links = links
	}
	return steps, s
}

// planUnusedVRFs deletes podnet's VRF devices that no interface is in
// after the plan: a desired valid interface keeps its VRF, one that could
// not be planned keeps the VRF its link is in now.
func planUnusedVRFs(valid []Interface, invalid map[string]bool, s State) []Step {
	inUse := map[string]bool{}
	for _, ifc := range valid {
		if !invalid[ifc.Name] {
			inUse[vrfName(ifc)] = true
		}
	}
	for name := range invalid {
		if ls, ok := s.Links[name]; ok {
			inUse[ls.VRF] = true
		}
	}
	var steps []Step
	for _, name := range sortedKeys(s.VRFs) {
		if !inUse[name] {
			steps = append(steps, Step{Op: OpDeleteVRF, VRF: name})
		}
	}
	return steps
}

// checkVRFTakeover refuses an interface whose VRF name is a link podnet
// did not create.
func checkVRFTakeover(ifc Interface, s State) error {
	if v := ifc.VRF; v != nil && s.Foreign[v.Name] {
		return fmt.Errorf("vrf %q: a link of that name exists in the pod and is not podnet's VRF; it is not taken over", v.Name)
	}
	return nil
}

// planEnslave moves an existing link into its VRF (or out of any): its
// podnet routes leave the old table first, and after the move its
// addresses and routes are put back, since the kernel's cycle of the link
// may have flushed them.
func planEnslave(ifc Interface, cur LinkState) []Step {
	var steps []Step
	for _, r := range cur.Routes {
		steps = append(steps, Step{Op: OpDelRoute, Interface: ifc.Name, Route: r})
	}
	steps = append(steps, Step{Op: OpSetVRF, Interface: ifc.Name, VRF: vrfName(ifc)})
	del, _ := diffAddresses(cur.Addresses, ifc.Addresses)
	for _, a := range del {
		steps = append(steps, Step{Op: OpDelAddress, Interface: ifc.Name, Address: a})
	}
	return append(steps, planAddressedUp(ifc)...)
}

// routeTable is the table an interface's routes live in (0 = main).
func routeTable(ifc Interface) uint32 {
	if ifc.VRF == nil {
		return 0
	}
	return ifc.VRF.Table
}

// vrfRouteKey extends a route's key by its table, so that one route in
// two tables is two routes.
func vrfRouteKey(key string, r Route) string {
	if r.Table == 0 {
		return key
	}
	return fmt.Sprintf("%s table %d", key, r.Table)
}
