package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/hostdev"
)

// The agent re-judges a running pod's approval with the webhook's own
// resolution: each approved interface is turned back into the request it
// stands for and resolved against the current profiles by resolveInterface,
// the function that resolved it at admission. What the resolution refuses,
// or resolves differently, is what the admin no longer allows. Nothing here
// judges a value by a rule of its own; it only sorts the webhook's verdicts
// into "changed in place" and "detached".

// rejudge is one run over an approval: the namespace's scope as the
// webhook builds it, and how many interfaces each profile still grants.
type rejudge struct {
	in      GrantInput
	scope   scope
	granted map[string]int
}

func newRejudge(in GrantInput) *rejudge {
	// The service account plays no part in what profiles grant.
	s := buildScope(Input{Namespace: in.Namespace, Pod: &corev1.Pod{}, Profiles: in.Profiles})
	return &rejudge{in: in, scope: s, granted: map[string]int{}}
}

// interfaceNarrowed judges one approved interface (the i-th of the
// approval) again: nil when it stands as approved, else what the admin no
// longer allows and what is left of the interface (Narrowed nil: detach).
// Interfaces are judged in approval order, so that the ones over a lowered
// maxInterfaces are the last ones.
func (j *rejudge) interfaceNarrowed(i int, ai v1alpha1.ApprovedInterface) *Revocation {
	rev := &Revocation{Interface: ai.Interface, Network: ai.Network}
	prof, n, why := j.offered(ai)
	if why != "" {
		rev.Reason = why
		return rev
	}
	root := field.NewPath("interfaces").Index(i)
	req := requestOf(ai)
	got, errs := resolveInterface(root, req, n, prof)
	var changes []string
	var mtuOpen string
	if len(errs) > 0 {
		changes, mtuOpen = narrowInPlace(&req, n, root, errs)
		got, errs = resolveInterface(root, req, n, prof)
	}
	if len(errs) > 0 {
		rev.Reason = describeErrs(root, errs)
		return rev
	}
	if mtuOpen != "" {
		// The network chose the MTU: it may keep it, or lower it.
		switch {
		case got.MTU == ai.MTU:
		case got.MTU != 0 && got.MTU < ai.MTU:
			changes = append(changes, fmt.Sprintf("mtu %d lowered to %d: %s", ai.MTU, got.MTU, mtuOpen))
		default:
			rev.Reason = fmt.Sprintf("mtu %d: %s", ai.MTU, mtuOpen)
			return rev
		}
		req.MTU = got.MTU
	}
	if why := detachedFields(ai, got); why != "" {
		rev.Reason = fmt.Sprintf("%s in network %q of profile %q", why, ai.Network, prof.Name)
		return rev
	}
	if why := addressesRevoked(prof.Name, n, podnetAddresses(ai, j.in.Addresses[ai.Interface])); why != "" {
		rev.Reason = why
		return rev
	}
	if j.granted[prof.Name]++; j.granted[prof.Name] > maxInterfaces(prof) {
		rev.Reason = fmt.Sprintf("interface %s is interface %d through profile %q, above its maxInterfaces %d (the last interfaces in approval order go first)", ai.Interface, j.granted[prof.Name], prof.Name, maxInterfaces(prof))
		return rev
	}
	if len(changes) == 0 {
		return nil
	}
	left := narrowed(ai, req)
	rev.Narrowed = &left
	rev.Reason = strings.Join(changes, "; ")
	return rev
}

// offered finds the profile that granted the interface and the network it
// offers now, as the webhook's scope sees them, or says why not.
func (j *rejudge) offered(ai v1alpha1.ApprovedInterface) (*v1alpha1.NetworkProfile, *v1alpha1.Network, string) {
	var p *v1alpha1.NetworkProfile
	for i := range j.in.Profiles {
		if j.in.Profiles[i].Name == ai.Profile {
			p = &j.in.Profiles[i]
		}
	}
	if p == nil || p.DeletionTimestamp != nil {
		return nil, nil, fmt.Sprintf("profile %q is gone", ai.Profile)
	}
	matched, err := matchSelector(&p.Spec.NamespaceSelector, j.in.Namespace.Labels)
	switch {
	case err != nil:
		return nil, nil, fmt.Sprintf("profile %q has an invalid namespaceSelector: %v", p.Name, err)
	case !matched:
		return nil, nil, fmt.Sprintf("profile %q no longer selects namespace %q", p.Name, j.in.Namespace.Name)
	case !slices.Contains(j.scope.profiles, p):
		return nil, nil, strings.Join(j.scope.adminErrsOf(p), "; ")
	}
	o := j.scope.offers[ai.Network]
	switch {
	case o == nil || !slices.Contains(o.profiles, p):
		return nil, nil, fmt.Sprintf("profile %q no longer offers network %q", p.Name, ai.Network)
	case o.conflict != "":
		return nil, nil, o.conflict
	}
	return p, o.network, ""
}

// adminErrsOf are the scope's notes on profile p, which it refused.
func (s scope) adminErrsOf(p *v1alpha1.NetworkProfile) []string {
	var out []string
	for _, e := range s.adminErrs {
		if strings.HasPrefix(e, fmt.Sprintf("profile %q ", p.Name)) {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		out = []string{fmt.Sprintf("profile %q is refused by the policy", p.Name)}
	}
	return out
}

// requestOf is the request an approved interface stands for, every value
// spelled out: resolving it again must give the same interface, unless the
// admin narrowed the network since.
func requestOf(ai v1alpha1.ApprovedInterface) NetworkRequest {
	r := NetworkRequest{
		Name: ai.Network, Interface: ai.Interface, MAC: ai.MAC, MTU: ai.MTU, VLAN: ai.VLAN,
		DefaultRoute: slices.Clone(ai.DefaultRoute),
	}
	if ai.IPAM != nil {
		r.IPs = slices.Clone(ai.IPAM.Static)
	}
	if ai.VRF != nil {
		r.VRF = &VRFRequest{Name: ai.VRF.Name, Table: int64(ai.VRF.Table)}
	}
	r.Settings = maps.Clone(ai.Settings)
	r.SLAAC = ai.SLAAC
	r.Offloads = maps.Clone(ai.Offloads)
	for _, rt := range ai.Routes {
		r.Routes = append(r.Routes, RouteRequest{Dst: rt.Dst, Gateway: rt.Gateway})
	}
	tunnelRequest(&r, ai.Tunnel)
	return r
}

// narrowInPlace takes out of the request what a running interface can lose
// without being rebuilt, where the resolution refused it: routes and the
// default route go; an MTU above the new maximum comes down to it. It
// returns the changes made, in words naming the value and the new limit.
// Where the network no longer lets an MTU be chosen, the request leaves it
// to the network and mtuOpen is the refusal: the caller keeps what the
// network chooses only if it is not above the approved MTU. Every other
// refusal stays and detaches the interface.
func narrowInPlace(req *NetworkRequest, n *v1alpha1.Network, root *field.Path, errs field.ErrorList) (changes []string, mtuOpen string) {
	var dropRoutes []int
	for _, e := range errs {
		f := relField(root, e.Field)
		switch {
		case f == "mtu" && n.MTU == nil:
			mtuOpen, req.MTU = e.Detail, 0
		case f == "mtu":
			if most := mtuCeiling(n); req.MTU > most {
				changes = append(changes, fmt.Sprintf("mtu %d lowered to %d: %s", req.MTU, most, e.Detail))
				req.MTU = most
			}
		case f == "routes":
			for k := range req.Routes {
				dropRoutes = append(dropRoutes, k)
			}
			changes = append(changes, fmt.Sprintf("routes %s removed: %s", routeDsts(req.Routes), e.Detail))
		case strings.HasPrefix(f, "routes["):
			var k int
			if _, err := fmt.Sscanf(f, "routes[%d]", &k); err == nil && k < len(req.Routes) {
				dropRoutes = append(dropRoutes, k)
				changes = append(changes, fmt.Sprintf("route %s removed: %s", req.Routes[k].Dst, e.Detail))
			}
		case strings.HasPrefix(f, "settings["):
			name := strings.TrimSuffix(strings.TrimPrefix(f, "settings["), "]")
			if v, ok := req.Settings[name]; ok {
				to := settingWithin(name, v, n)
				changes = append(changes, describeSetting(name, v, to)+": "+e.Detail)
				req.Settings[name] = to
			}
		case f == "default-route" || strings.HasPrefix(f, "default-route["):
			if req.DefaultRoute != nil {
				changes = append(changes, fmt.Sprintf("default route via %s removed: %s", strings.Join(req.DefaultRoute, ", "), e.Detail))
				req.DefaultRoute = nil
			}
		}
	}
	kept := req.Routes[:0:0]
	for k, rt := range req.Routes {
		if !slices.Contains(dropRoutes, k) {
			kept = append(kept, rt)
		}
	}
	req.Routes = kept
	if len(req.Routes) == 0 {
		req.Routes = nil
	}
	return changes, mtuOpen
}

// mtuCeiling is the largest MTU the network's range allows now, lowered
// to what its kind carries.
func mtuCeiling(n *v1alpha1.Network) int32 {
	_, hi := mtuBounds(n.MTU)
	if k, err := kindOf(n); err == nil && k.mtuLimit != nil {
		if most, _ := k.mtuLimit(n); most > 0 && most < hi {
			hi = most
		}
	}
	return hi
}

// detachedFields compares how the interface is made, as approved and as
// the network makes it now; any difference needs a new link. A network
// that no longer allows raw sockets detaches an interface approved with
// them: the pod may hold NET_RAW because of it.
func detachedFields(ai, now v1alpha1.ApprovedInterface) string {
	var diffs []string
	for _, f := range []struct{ name, was, is string }{
		{"kind", string(ai.Kind), string(now.Kind)},
		{"bridge", ai.Bridge, now.Bridge},
		{"master", ai.Master, now.Master},
		{"mode", ai.Mode, now.Mode},
		{"uplink", ai.Uplink, now.Uplink},
		{"vxlan", describeVXLAN(ai.VXLAN), describeVXLAN(now.VXLAN)},
		{"vlan", describeVLAN(ai.VLAN), describeVLAN(now.VLAN)},
		{"tunnel", describeApprovedTunnel(ai.Tunnel), describeApprovedTunnel(now.Tunnel)},
		{"host devices", describeDevices(ai.Devices), describeDevices(now.Devices)},
	} {
		if f.was != f.is {
			diffs = append(diffs, fmt.Sprintf("%s %s is now %s", f.name, orNone(nonEmpty(f.was)), orNone(nonEmpty(f.is))))
		}
	}
	if ai.RawSockets && !now.RawSockets {
		diffs = append(diffs, "raw sockets were allowed and are no longer (allowRawSockets is false; the pod may hold NET_RAW for this network)")
	}
	return strings.Join(diffs, ", ")
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// describeDevices says a host-device selector; any change of it takes the
// NIC back: the one the pod holds may not be selected any more.
func describeDevices(d *v1alpha1.ApprovedDevices) string {
	if d == nil {
		return ""
	}
	s := ApprovedSelector(d).String()
	if d.VF != nil {
		s += fmt.Sprintf(" (spoof check %s, trust %s)", onOff(d.VF.SpoofCheck), onOff(d.VF.Trust))
	}
	return s
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// ApprovedSelector is an approved host-device selector in the terms of
// pkg/hostdev: the one conversion the agent picks NICs by and the
// policy describes them by.
func ApprovedSelector(d *v1alpha1.ApprovedDevices) hostdev.Selector {
	return hostdev.Selector{Names: d.Names, Drivers: d.Drivers, PCIAddresses: d.PCIAddresses, VFs: d.VF != nil}
}

func describeVXLAN(x *v1alpha1.ApprovedVXLAN) string {
	if x == nil {
		return ""
	}
	s := fmt.Sprintf("vni %d port %d", x.VNI, x.Port)
	if x.LocalInterface != "" {
		s += " local interface " + x.LocalInterface
	}
	if x.LocalAddress != "" {
		s += " local address " + x.LocalAddress
	}
	return s
}

func describeVLAN(v int32) string {
	if v == 0 {
		return ""
	}
	return fmt.Sprint(v)
}

// narrowed is the approved interface with what the narrowed request still
// asks for: only MTU, routes and the default route ever change here, and
// only downwards.
func narrowed(ai v1alpha1.ApprovedInterface, req NetworkRequest) v1alpha1.ApprovedInterface {
	out := ai
	out.MTU = req.MTU
	out.DefaultRoute = req.DefaultRoute
	out.Settings = req.Settings
	out.Routes = nil
	for _, rt := range ai.Routes {
		for _, keep := range req.Routes {
			if keep.Dst == rt.Dst && keep.Gateway == rt.Gateway {
				out.Routes = append(out.Routes, rt)
				break
			}
		}
	}
	return out
}

// relField is an error's field path below the interface's root.
func relField(root *field.Path, f string) string {
	return strings.TrimPrefix(f, root.String()+".")
}

// describeErrs words the resolution's refusals: field, value and the
// webhook's own message, which names the profile's limit.
func describeErrs(root *field.Path, errs field.ErrorList) string {
	parts := make([]string, len(errs))
	for i, e := range errs {
		f := relField(root, e.Field)
		if e.Type == field.ErrorTypeInvalid {
			parts[i] = fmt.Sprintf("%s %v: %s", f, e.BadValue, e.Detail)
		} else {
			parts[i] = fmt.Sprintf("%s: %s", f, e.Detail)
		}
	}
	return strings.Join(parts, "; ")
}

// Narrow is what the agent builds for an approval after a judgement: the
// approval without its detached interfaces, and with the ones narrowed in
// place replaced. It never adds anything: the signed approval stays the
// upper bound, and a later judgement that revokes nothing gives the
// approval back whole. When every interface is gone, so is the primary
// interface's tuning.
func Narrow(a *v1alpha1.Approval, revs []Revocation) *v1alpha1.Approval {
	if a == nil || len(revs) == 0 {
		return a
	}
	out := *a
	out.Interfaces = nil
	for _, ai := range a.Interfaces {
		r := findRevocation(revs, ai.Interface)
		switch {
		case r == nil:
			out.Interfaces = append(out.Interfaces, ai)
		case r.Narrowed != nil:
			out.Interfaces = append(out.Interfaces, *r.Narrowed)
		}
	}
	if len(out.Interfaces) == 0 {
		out.PrimaryMTU = 0
	}
	return &out
}

func findRevocation(revs []Revocation, iface string) *Revocation {
	for i := range revs {
		if revs[i].Interface == iface {
			return &revs[i]
		}
	}
	return nil
}
