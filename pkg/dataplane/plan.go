package dataplane

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
)

// State is what the executor observed, in the planner's own terms: podnet's
// links inside the pod and the node links the pod's interfaces refer to.
type State struct {
	// Links are the podnet-marked links inside the pod, by name.
	Links map[string]LinkState
	// Foreign are the other link names inside the pod; they are never
	// touched, and a desired interface of that name is an error.
	Foreign map[string]bool
	// PrimaryMTU is the MTU of the pod's eth0 (0 = there is no eth0).
	PrimaryMTU int
	// Ports are node veth ends by node name; a missing entry means absent.
	Ports map[string]PortState
	// NodeLinks are node bridges and parent links by name; a missing entry
	// means absent.
	NodeLinks map[string]NodeLinkState
	// VRFs are podnet's VRF devices inside the pod, by name. A VRF device
	// podnet did not create is in Foreign.
	VRFs map[string]VRFState
	// Devices are the node links a host device interface could take,
	// read only when one needs a NIC; Picked is the planner's choice
	// among them, by interface.
	Devices []DeviceState
	Picked  map[string]string
}

// LinkState is one podnet link inside the pod.
type LinkState struct {
	Kind Kind
	Up   bool
	MTU  int
	MAC  net.HardwareAddr
	// ParentIndex is the node ifindex of a macvlan, ipvlan or vlan parent.
	ParentIndex int
	// Mode is the macvlan or ipvlan mode in Interface.Mode's words.
	Mode string
	// Addresses are the permanent ones, which podnet adds: they leave out
	// kernel-made IPv6 link-local addresses and Autoconf.
	Addresses []net.IPNet
	// Autoconf are the usable addresses the kernel made from router
	// advertisements: never planned; reported for an interface that asked
	// for SLAAC.
	Autoconf []net.IPNet
	// Routes are the routes podnet made through this link.
	Routes []Route
	// Unfinished: podnet stopped while creating this link (before it was
	// marked or grouped); it is deleted and created anew.
	Unfinished bool
	// VRF is the VRF device the link is enslaved to ("" = none).
	VRF string
	// Tunnel is what a wireguard or vxlan-tunnel link says of its far end.
	Tunnel *TunnelState
	// Settings are the values of the settings the desired interface
	// lists (only those are read); one that could not be read is absent.
	Settings map[string]int64
	// Offloads are the states of the features the desired interface
	// lists, read the same way.
	Offloads map[string]bool
	// Origin is what a host device was on the node; Driver and PCI are
	// its driver and bus address.
	Origin      *DeviceOrigin
	Driver, PCI string
	// VF is a host device's settings on its PF, nil when it is no VF
	// (or they could not be read).
	VF *VFState
}

// PortState is the node end of a pod veth.
type PortState struct {
	Up    bool
	MTU   int
	Alias string
	// Master is the name of the bridge the port is in ("" = none).
	Master string
	// PVID and VIDs are the port's bridge VLANs; they are only read when
	// its bridge filters VLANs.
	PVID int
	VIDs []int
}

// NodeLinkState is a node bridge or parent link.
type NodeLinkState struct {
	Index         int
	MTU           int
	Bridge        bool
	Owned         bool // carries podnet's bridge alias
	VLANFiltering bool
}

// Op is what one step does.
type Op string

// The steps the executor knows. Pod-side steps name Step.Interface, node-side
// steps Step.Node.
const (
	OpDelete               Op = "delete"                  // delete a pod link (a veth takes its node end along)
	OpDeletePort           Op = "delete-port"             // delete a node veth end left without its pod end
	OpCreate               Op = "create"                  // create a pod link, with its node end for bridge kind
	OpAttachPort           Op = "attach-port"             // put a node end into its bridge, creating the bridge if absent
	OpEnableVLANFiltering  Op = "enable-vlan-filtering"   // turn on vlan_filtering of a podnet bridge
	OpSetVLAN              Op = "set-vlan"                // make VLAN the port's only (PVID, untagged) VLAN
	OpSetMTU               Op = "set-mtu"                 // pod link MTU
	OpSetPortMTU           Op = "set-port-mtu"            // node end MTU
	OpSetPortAlias         Op = "set-port-alias"          // node end alias
	OpSetMAC               Op = "set-mac"                 // pod link MAC
	OpSetMode              Op = "set-mode"                // macvlan mode
	OpSetSetting           Op = "set-setting"             // a per-interface setting (Step.Setting, Step.Value)
	OpSetOffloads          Op = "set-offloads"            // ethtool features (Step.Offloads)
	OpUp                   Op = "up"                      // pod link up
	OpPortUp               Op = "port-up"                 // node end up
	OpAddAddress           Op = "add-address"             // pod link address
	OpDelAddress           Op = "del-address"             // pod link address
	OpAddRoute             Op = "add-route"               // pod route
	OpDelRoute             Op = "del-route"               // pod route
	OpSetPrimaryMTU        Op = "set-primary-mtu"         // eth0 MTU
	OpDeleteBridgeIfUnused Op = "delete-bridge-if-unused" // podnet bridge without ports
	OpCreateVRF            Op = "create-vrf"              // VRF device in the pod (Step.VRF, Step.Table)
	OpVRFUp                Op = "vrf-up"                  // VRF device up
	OpDeleteVRF            Op = "delete-vrf"              // podnet VRF device no interface is in
	OpSetVRF               Op = "set-vrf"                 // enslave a pod link to Step.VRF ("" = release it)
	OpConfigureTunnel      Op = "configure-tunnel"        // wireguard key pair and peer
)

// Step is one change. Only the fields its Op needs are set.
type Step struct {
	Op Op
	// Interface is the pod-side link name ("" for node-only steps).
	Interface string
	// Node is the node-side link: a veth end or a bridge.
	Node string
	// Spec is the interface to create, its MTU resolved (OpCreate).
	Spec    Interface
	MTU     int
	MAC     net.HardwareAddr
	Address net.IPNet
	Route   Route
	// VLAN is the port's PVID (OpSetVLAN) and RemoveVLANs the VLANs to
	// take off it.
	VLAN        int
	RemoveVLANs []int
	Mode        string
	// VLANFiltering says that a bridge OpAttachPort creates must filter.
	VLANFiltering bool
	// VRF names the VRF device of the VRF steps and OpSetVRF, Table its
	// routing table (OpCreateVRF).
	VRF   string
	Table uint32
	// Setting and Value are OpSetSetting's.
	Setting string
	Value   int64
	// Offloads are OpSetOffloads' features to turn on or off.
	Offloads map[string]bool
}

func (s Step) String() string {
	var b strings.Builder
	b.WriteString(string(s.Op))
	if s.Interface != "" {
		fmt.Fprintf(&b, " %s", s.Interface)
	}
	if s.Node != "" {
		fmt.Fprintf(&b, " node=%s", s.Node)
	}
	switch s.Op {
	case OpCreate:
		fmt.Fprintf(&b, " kind=%s mtu=%d", s.Spec.Kind, s.Spec.MTU)
	case OpSetMTU, OpSetPortMTU, OpSetPrimaryMTU:
		fmt.Fprintf(&b, " mtu=%d", s.MTU)
	case OpSetSetting:
		fmt.Fprintf(&b, " %s=%d", s.Setting, s.Value)
	case OpSetOffloads:
		for _, name := range sortedKeys(s.Offloads) {
			fmt.Fprintf(&b, " %s=%s", name, onOff(s.Offloads[name]))
		}
	case OpSetMAC:
		fmt.Fprintf(&b, " mac=%s", s.MAC)
	case OpSetMode:
		fmt.Fprintf(&b, " mode=%s", s.Mode)
	case OpAddAddress, OpDelAddress:
		fmt.Fprintf(&b, " %s", s.Address.String())
	case OpAddRoute, OpDelRoute:
		key, _ := routeKey(s.Route)
		fmt.Fprintf(&b, " %s", key)
	case OpSetVLAN:
		fmt.Fprintf(&b, " pvid=%d remove=%v", s.VLAN, s.RemoveVLANs)
	case OpAttachPort:
		fmt.Fprintf(&b, " vlan_filtering=%t", s.VLANFiltering)
	case OpCreateVRF:
		fmt.Fprintf(&b, " vrf=%s table=%d", s.VRF, s.Table)
	case OpVRFUp, OpDeleteVRF, OpSetVRF:
		fmt.Fprintf(&b, " vrf=%s", s.VRF)
	}
	return b.String()
}

// Defaults the kernel would pick, made explicit so that a re-apply compares
// like with like.
const (
	defaultVethMTU = 1500
	// defaultPVID is the bridge's default_pvid, which the kernel gives every
	// port that joins a vlan_filtering bridge.
	defaultPVID = 1
)

// Plan compares the desired pod with the observed state and returns the
// ordered steps that make the state match. It is pure: same input, same
// steps, and no steps when the state already matches.
//
// Interfaces that fail validation or cannot be planned get no steps (an
// existing link of that name is left as it is, never deleted) and an error;
// the others are planned anyway. An invalid pod-wide field stops everything.
func Plan(p Pod, s State) ([]Step, error) {
	steps, _, err := plan(p, s)
	return steps, err
}

// plan is Plan that also returns the interfaces it could not plan. A nil
// map means the pod itself is invalid.
func plan(p Pod, s State) ([]Step, map[string]bool, error) {
	if err := validatePod(p); err != nil {
		return nil, nil, err
	}
	valid, invalid, err := validateInterfaces(p.Interfaces)
	errs := []error{err}
	valid, err = validateVRFs(p.Interfaces, valid, invalid)
	errs = append(errs, err)

	var steps []Step
	unusedBridges := map[string]bool{}
	desired := map[string]bool{}
	for _, ifc := range valid {
		desired[ifc.Name] = true
	}
	// Links no longer asked for go first: that frees their names and
	// addresses for the interfaces that follow.
	for _, name := range sortedKeys(s.Links) {
		if desired[name] || invalid[name] {
			continue
		}
		steps = append(steps, Step{Op: OpDelete, Interface: name})
		markBridgeIfOwned(s, p.UID, name, unusedBridges)
	}
	s.Picked = pickDevices(valid, s)
	// A VRF is made only for interfaces that can be planned: one made for
	// an interface that then fails would be deleted again by the next
	// plan, and the pod would never settle.
	plannable := make([]Interface, 0, len(valid))
	for _, ifc := range valid {
		resolved, err := resolvePlannable(ifc, s)
		if err != nil {
			errs = append(errs, fmt.Errorf("interface %q: %w", ifc.Name, err))
			invalid[ifc.Name] = true
			continue
		}
		plannable = append(plannable, resolved)
	}
	vrfSteps, s := planVRFs(plannable, s)
	steps = append(steps, vrfSteps...)
	for _, ifc := range plannable {
		steps = append(steps, planInterface(p.UID, ifc, s, unusedBridges)...)
	}
	if p.PrimaryMTU != 0 {
		switch s.PrimaryMTU {
		case 0:
			errs = append(errs, fmt.Errorf("primary interface %q: not found in the pod", primaryName))
		case p.PrimaryMTU:
		default:
			steps = append(steps, Step{Op: OpSetPrimaryMTU, Interface: primaryName, MTU: p.PrimaryMTU})
		}
	}
	steps = append(steps, planUnusedVRFs(valid, invalid, s)...)
	for _, br := range sortedKeys(unusedBridges) {
		steps = append(steps, Step{Op: OpDeleteBridgeIfUnused, Node: br})
	}
	return steps, invalid, errors.Join(errs...)
}

// resolvePlannable returns a valid interface with its defaults resolved
// on this node, or why it cannot be planned here: a foreign link of its
// name, a foreign VRF, or node links it needs that are missing.
func resolvePlannable(ifc Interface, s State) (Interface, error) {
	if s.Foreign[ifc.Name] {
		return ifc, errors.New("a link of that name exists in the pod and is not podnet's")
	}
	if err := checkVRFTakeover(ifc, s); err != nil {
		return ifc, err
	}
	return resolveDefaults(ifc, s)
}

// planInterface returns the steps of one interface resolvePlannable
// resolved.
func planInterface(uid string, ifc Interface, s State, unusedBridges map[string]bool) []Step {
	var steps []Step
	cur, exists := s.Links[ifc.Name]
	if exists && needsRecreate(uid, ifc, cur, s) {
		steps = append(steps, Step{Op: OpDelete, Interface: ifc.Name})
		markBridgeIfOwned(s, uid, ifc.Name, unusedBridges)
		exists = false
		cur = LinkState{}
	}
	if !exists {
		return append(steps, planCreate(uid, ifc, s)...)
	}
	if t := kinds[ifc.Kind].tunnel; t != nil && t.configure != nil && t.configure(*ifc.Tunnel, cur.Tunnel) {
		steps = append(steps, Step{Op: OpConfigureTunnel, Interface: ifc.Name, Spec: ifc})
	}
	if hasPort(ifc.Kind) {
		steps = append(steps, planPort(uid, ifc, s, unusedBridges)...)
	}
	if cur.MTU != ifc.MTU {
		steps = append(steps, Step{Op: OpSetMTU, Interface: ifc.Name, MTU: ifc.MTU})
	}
	if ifc.MAC != nil && !bytes.Equal(cur.MAC, ifc.MAC) {
		steps = append(steps, Step{Op: OpSetMAC, Interface: ifc.Name, MAC: ifc.MAC})
	}
	if cur.Mode != ifc.Mode {
		steps = append(steps, Step{Op: OpSetMode, Interface: ifc.Name, Mode: ifc.Mode})
	}
	steps = append(steps, planSettings(ifc, cur.Settings)...)
	steps = append(steps, planOffloads(ifc, cur.Offloads)...)
	if cur.VRF != vrfName(ifc) {
		return append(steps, planEnslave(ifc, cur)...)
	}
	del, add := diffAddresses(cur.Addresses, ifc.Addresses)
	for _, a := range del {
		steps = append(steps, Step{Op: OpDelAddress, Interface: ifc.Name, Address: a})
	}
	for _, a := range add {
		steps = append(steps, Step{Op: OpAddAddress, Interface: ifc.Name, Address: a})
	}
	if !cur.Up {
		steps = append(steps, Step{Op: OpUp, Interface: ifc.Name})
	}
	delR, addR := diffRoutes(cur.Routes, ifc.Routes)
	for _, r := range delR {
		steps = append(steps, Step{Op: OpDelRoute, Interface: ifc.Name, Route: r})
	}
	for _, r := range addR {
		steps = append(steps, Step{Op: OpAddRoute, Interface: ifc.Name, Route: r})
	}
	return steps
}

// resolveDefaults fills in what the kernel would choose (MTU and mode),
// brings addresses and routes to one form (4-byte IPv4, mask of the
// address' own length), and checks the node links the interface needs.
func resolveDefaults(ifc Interface, s State) (Interface, error) {
	ifc.Addresses = slices.Clone(ifc.Addresses)
	for i, a := range ifc.Addresses {
		ifc.Addresses[i] = canonicalNet(a)
	}
	ifc.Routes = slices.Clone(ifc.Routes)
	for i, r := range ifc.Routes {
		ifc.Routes[i] = Route{Dst: canonicalNet(r.Dst), Gateway: canonicalIP(r.Gateway), Table: routeTable(ifc)}
	}
	return resolveKind(ifc, s)
}

// needsRecreate says whether an existing link cannot be changed into the
// desired one in place: an unfinished link, another kind, another parent,
// a lost node end, or a mode change that is not made in place. (A VLAN change moves the node end
// to another bridge in place.)
func needsRecreate(uid string, ifc Interface, cur LinkState, s State) bool {
	if cur.Unfinished || cur.Kind != podKind(ifc.Kind) {
		return true
	}
	spec := kinds[ifc.Kind]
	if ifc.Kind == KindHostDevice {
		return !deviceStillSelected(ifc, cur) || vfDrifted(ifc, cur)
	}
	if spec.tunnel != nil {
		return spec.tunnel.recreate(*ifc.Tunnel, cur.Tunnel, s)
	}
	if spec.bridgePort {
		_, ok := s.Ports[hostName(uid, ifc.Name)]
		return !ok
	}
	if cur.Mode != ifc.Mode && !spec.modeInPlace(cur.Mode, ifc.Mode) {
		return true
	}
	return cur.ParentIndex != s.NodeLinks[ifc.Master].Index
}

// planCreate returns the steps that bring up a new interface.
func planCreate(uid string, ifc Interface, s State) []Step {
	var steps []Step
	host := hostName(uid, ifc.Name)
	if hasPort(ifc.Kind) {
		if _, ok := s.Ports[host]; ok {
			// A node end whose pod end is gone: its old netns is still
			// being torn down, or it was moved. It holds the name.
			steps = append(steps, Step{Op: OpDeletePort, Interface: ifc.Name, Node: host})
		}
	}
	steps = append(steps, Step{Op: OpCreate, Interface: ifc.Name, Node: nodeName(host, ifc), Spec: ifc})
	if t := kinds[ifc.Kind].tunnel; t != nil && t.configure != nil {
		steps = append(steps, Step{Op: OpConfigureTunnel, Interface: ifc.Name, Spec: ifc})
	}
	if hasPort(ifc.Kind) {
		steps = append(steps, planJoin(ifc, host, s)...)
		steps = append(steps, Step{Op: OpPortUp, Interface: ifc.Name, Node: host})
	}
	// Before the link goes up: addr_gen_mode, accept_dad and the like
	// decide what happens then.
	steps = append(steps, planSettings(ifc, nil)...)
	steps = append(steps, planOffloads(ifc, nil)...)
	if ifc.VRF != nil {
		// Before the addresses: enslaving cycles the link.
		steps = append(steps, Step{Op: OpSetVRF, Interface: ifc.Name, VRF: ifc.VRF.Name})
	}
	return append(steps, planAddressedUp(ifc)...)
}

// planSettings sets each desired setting whose value is not the observed
// one, in name order.
func planSettings(ifc Interface, cur map[string]int64) []Step {
	var steps []Step
	for _, name := range sortedKeys(ifc.Settings) {
		if v, ok := cur[name]; !ok || v != ifc.Settings[name] {
			steps = append(steps, Step{Op: OpSetSetting, Interface: ifc.Name, Setting: name, Value: ifc.Settings[name]})
		}
	}
	return steps
}

// planOffloads sets, in one step, the desired features whose state is not
// the observed one.
func planOffloads(ifc Interface, cur map[string]bool) []Step {
	set := map[string]bool{}
	for name, on := range ifc.Offloads {
		if v, ok := cur[name]; !ok || v != on {
			set[name] = on
		}
	}
	if len(set) == 0 {
		return nil
	}
	return []Step{{Op: OpSetOffloads, Interface: ifc.Name, Offloads: set}}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// planAddressedUp gives a link that has none of them yet its addresses,
// sets it up and adds its routes: the routes need the link up and its
// addresses for their source.
func planAddressedUp(ifc Interface) []Step {
	var steps []Step
	for _, a := range ifc.Addresses {
		steps = append(steps, Step{Op: OpAddAddress, Interface: ifc.Name, Address: a})
	}
	steps = append(steps, Step{Op: OpUp, Interface: ifc.Name})
	for _, r := range ifc.Routes {
		steps = append(steps, Step{Op: OpAddRoute, Interface: ifc.Name, Route: r})
	}
	return steps
}

// nodeName is the node link a create step works with: the veth end for
// bridge and vlan kinds, the parent otherwise.
func nodeName(host string, ifc Interface) string {
	if hasPort(ifc.Kind) {
		return host
	}
	if ifc.Device != "" {
		return ifc.Device
	}
	return ifc.Master
}

// portVLAN is the PVID a port gets on its bridge: a VLAN network's bridge
// does not filter, its uplink tags.
func portVLAN(ifc Interface) int {
	if kinds[ifc.Kind].vlanOnPort {
		return ifc.VLAN
	}
	return 0
}

// planJoin puts a node end into its bridge and sets its VLAN.
func planJoin(ifc Interface, host string, s State) []Step {
	vlan := portVLAN(ifc)
	steps := []Step{{Op: OpAttachPort, Interface: ifc.Name, Node: host, Spec: ifc, VLANFiltering: vlan > 0}}
	br, ok := s.NodeLinks[ifc.Bridge]
	if ok && vlan > 0 && !br.VLANFiltering {
		steps = append(steps, Step{Op: OpEnableVLANFiltering, Interface: ifc.Name, Node: ifc.Bridge})
	}
	if vlan > 0 && vlan != defaultPVID {
		steps = append(steps, Step{Op: OpSetVLAN, Interface: ifc.Name, Node: host, VLAN: vlan, RemoveVLANs: []int{defaultPVID}})
	}
	return steps
}

// planPort keeps an existing node end in shape: alias, MTU, bridge, VLAN, up.
func planPort(uid string, ifc Interface, s State, unusedBridges map[string]bool) []Step {
	host := hostName(uid, ifc.Name)
	port := s.Ports[host]
	var steps []Step
	if port.Alias != portAlias(uid, ifc.Name) {
		steps = append(steps, Step{Op: OpSetPortAlias, Interface: ifc.Name, Node: host})
	}
	if port.MTU != ifc.MTU {
		steps = append(steps, Step{Op: OpSetPortMTU, Interface: ifc.Name, Node: host, MTU: ifc.MTU})
	}
	_, bridgeExists := s.NodeLinks[ifc.Bridge]
	if !bridgeExists || port.Master != ifc.Bridge {
		if old, ok := s.NodeLinks[port.Master]; ok && old.Owned {
			unusedBridges[port.Master] = true
		}
		steps = append(steps, planJoin(ifc, host, s)...)
	} else if br := s.NodeLinks[ifc.Bridge]; br.VLANFiltering || portVLAN(ifc) > 0 {
		pvid, vids := port.PVID, port.VIDs
		if !br.VLANFiltering {
			// VLANs are not read from a bridge that does not filter; the
			// kernel gave the port the default PVID when it joined.
			steps = append(steps, Step{Op: OpEnableVLANFiltering, Interface: ifc.Name, Node: ifc.Bridge})
			pvid, vids = defaultPVID, []int{defaultPVID}
		}
		want := portVLAN(ifc)
		if want == 0 {
			want = defaultPVID
		}
		var remove []int
		for _, vid := range vids {
			if vid != want {
				remove = append(remove, vid)
			}
		}
		if pvid != want || len(remove) > 0 {
			steps = append(steps, Step{Op: OpSetVLAN, Interface: ifc.Name, Node: host, VLAN: want, RemoveVLANs: remove})
		}
	}
	if !port.Up {
		steps = append(steps, Step{Op: OpPortUp, Interface: ifc.Name, Node: host})
	}
	return steps
}

// markBridgeIfOwned notes the podnet bridge of a pod link about to go, so the
// plan ends by deleting it if no port is left.
func markBridgeIfOwned(s State, uid, name string, unusedBridges map[string]bool) {
	if !hasPort(s.Links[name].Kind) {
		return
	}
	port, ok := s.Ports[hostName(uid, name)]
	if !ok {
		return
	}
	if br, ok := s.NodeLinks[port.Master]; ok && br.Owned {
		unusedBridges[port.Master] = true
	}
}

// diffAddresses returns the observed addresses to delete and the desired
// ones to add.
func diffAddresses(observed, desired []net.IPNet) (del, add []net.IPNet) {
	return diffBy(observed, desired, func(a net.IPNet) string {
		key, _ := addressKey(a)
		return key
	})
}

// diffRoutes returns the observed routes to delete and the desired ones to add.
func diffRoutes(observed, desired []Route) (del, add []Route) {
	return diffBy(observed, desired, func(r Route) string {
		key, _ := routeKey(r)
		return key
	})
}

// diffBy compares two lists by a key, keeping each list's order.
func diffBy[T any](observed, desired []T, key func(T) string) (del, add []T) {
	want := map[string]bool{}
	for _, d := range desired {
		want[key(d)] = true
	}
	have := map[string]bool{}
	for _, o := range observed {
		k := key(o)
		have[k] = true
		if !want[k] {
			del = append(del, o)
		}
	}
	for _, d := range desired {
		if !have[key(d)] {
			add = append(add, d)
		}
	}
	return del, add
}

// statuses reports the desired interfaces that exist, in the pod's order,
// leaving out those named in skip (their apply failed).
func statuses(p Pod, s State, skip map[string]bool) []InterfaceStatus {
	var out []InterfaceStatus
	for _, ifc := range p.Interfaces {
		cur, ok := s.Links[ifc.Name]
		if !ok || skip[ifc.Name] {
			continue
		}
		st := InterfaceStatus{Name: ifc.Name, MAC: cur.MAC.String(), MTU: cur.MTU, IPs: []string{}}
		if cur.Tunnel != nil {
			st.PublicKey = cur.Tunnel.PublicKey
		}
		addrs := desiredFirst(ifc.Addresses, cur.Addresses)
		if ifc.SLAAC {
			addrs = append(addrs, cur.Autoconf...)
		}
		for _, a := range addrs {
			key, err := addressKey(a)
			if err == nil {
				st.IPs = append(st.IPs, key)
			}
		}
		out = append(out, st)
	}
	return out
}

// desiredFirst orders observed addresses as the desired ones are listed,
// then those not desired as observed: a status says the same whatever order
// the kernel lists addresses in.
func desiredFirst(desired, observed []net.IPNet) []net.IPNet {
	out := make([]net.IPNet, 0, len(observed))
	taken := make([]bool, len(observed))
	for _, d := range desired {
		for i, o := range observed {
			if !taken[i] && o.IP.Equal(d.IP) && prefixLen(o) == prefixLen(d) {
				out, taken[i] = append(out, o), true
				break
			}
		}
	}
	for i, o := range observed {
		if !taken[i] {
			out = append(out, o)
		}
	}
	return out
}

func prefixLen(n net.IPNet) int {
	ones, _ := n.Mask.Size()
	return ones
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
