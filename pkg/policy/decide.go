package policy

import (
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// Input is everything a decision depends on.
type Input struct {
	// Namespace of the pod, with its labels.
	Namespace *corev1.Namespace
	// Pod as admitted: its annotations and spec.serviceAccountName are read.
	Pod *corev1.Pod
	// Profiles are all NetworkProfiles; Decide picks those that apply.
	Profiles []v1alpha1.NetworkProfile
}

// The MTU bounds used when a profile's MTURange leaves one open; they are
// the CRD's own limits.
const (
	minMTU = 576
	maxMTU = 65535
)

// Decide parses the pod's podnet.io/networks annotation and judges it
// against the profiles that apply to the pod. A pod without the annotation,
// or with a blank one, asks for nothing: Decide returns (nil, nil). On
// denial the ErrorList is non-empty, Approval is nil, and the list ends with
// what the namespace may ask for instead, so errs.ToAggregate().Error() is a
// message fit for `kubectl apply` output.
func Decide(in Input) (*v1alpha1.Approval, field.ErrorList) {
	if in.Pod == nil || in.Namespace == nil {
		return nil, field.ErrorList{field.InternalError(annotationPath, fmt.Errorf("policy input lacks the pod or its namespace"))}
	}
	if in.Pod.Namespace != "" && in.Pod.Namespace != in.Namespace.Name {
		return nil, field.ErrorList{field.InternalError(annotationPath, fmt.Errorf("policy input pairs pod namespace %q with namespace object %q", in.Pod.Namespace, in.Namespace.Name))}
	}
	raw, ok := in.Pod.Annotations[v1alpha1.NetworksAnnotation]
	if !ok || strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	s := buildScope(in)
	if msgs := validation.IsDNS1123Subdomain(s.serviceAccount); len(msgs) > 0 {
		// The API server validates the name only after mutating admission;
		// an approval must never carry a name that no pod can have.
		return nil, field.ErrorList{field.Invalid(field.NewPath("spec", "serviceAccountName"), s.serviceAccount, strings.Join(msgs, "; "))}
	}
	reqs, errs := ParseRequest(raw)
	if len(errs) == 0 && s.enabled {
		var a *v1alpha1.Approval
		a, errs = s.decide(reqs)
		if len(errs) == 0 {
			a.RequestHash = v1alpha1.HashRequest(raw)
			return a, nil
		}
	}
	// The last entry says what the namespace may use instead, or that it is
	// not opted in at all.
	errs = append(errs, s.adminHints()...)
	return nil, append(errs, field.Forbidden(annotationPath, s.describe()))
}

// decide resolves parsed requests into an approval for an opted-in
// namespace.
func (s scope) decide(reqs []NetworkRequest) (*v1alpha1.Approval, field.ErrorList) {
	a := &v1alpha1.Approval{
		Namespace:      s.namespace,
		ServiceAccount: s.serviceAccount,
		Profiles:       []v1alpha1.ProfileRef{},
		Interfaces:     []v1alpha1.ApprovedInterface{},
	}
	var errs field.ErrorList
	granted := map[*v1alpha1.NetworkProfile]int{}
	used := newPodUsage()
	for i, r := range reqs {
		p := annotationPath.Index(i)
		if r.Primary {
			mtu, prof, e := s.resolvePrimary(p, r)
			errs = append(errs, e...)
			if prof != nil {
				a.PrimaryMTU = mtu
				// Listed in Profiles, but no interface is counted.
				if _, ok := granted[prof]; !ok {
					granted[prof] = 0
				}
			}
			continue
		}
		if r.Namespace != "" && r.Namespace != s.namespace {
			errs = append(errs, field.Invalid(p.Child("namespace"), r.Namespace, fmt.Sprintf("network %q: profiles grant networks to the pod's own namespace %q only; references to other namespaces are not allowed", r.Name, s.namespace)))
			continue
		}
		o := s.offers[r.Name]
		switch {
		case o == nil:
			e := field.NotFound(p.Child("name"), r.Name)
			e.Detail = fmt.Sprintf("no profile offers network %q to namespace %q and service account %q", r.Name, s.namespace, s.serviceAccount)
			errs = append(errs, e)
			continue
		case o.conflict != "":
			errs = append(errs, field.Invalid(p.Child("name"), r.Name, o.conflict))
			continue
		}
		prof := pickProfile(o, granted)
		if prof == nil {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("network %q: interface %s would be interface %d through %s, above maxInterfaces %s", r.Name, r.Interface, countFor(o, granted)+1, profileNames(o.profiles), maxList(o.profiles))))
			continue
		}
		iface, e := resolveInterface(p, r, o.network, prof)
		if len(e) == 0 {
			e = used.add(p, iface)
		}
		errs = append(errs, e...)
		if len(e) == 0 {
			granted[prof]++
			a.Interfaces = append(a.Interfaces, iface)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	for prof := range granted {
		a.Profiles = append(a.Profiles, v1alpha1.ProfileRef{Name: prof.Name, Generation: prof.Generation})
	}
	sort.Slice(a.Profiles, func(i, j int) bool { return a.Profiles[i].Name < a.Profiles[j].Name })
	return a, nil
}

// pickProfile returns the first profile (by name) offering the network that
// still has room for another interface, or nil.
func pickProfile(o *offer, granted map[*v1alpha1.NetworkProfile]int) *v1alpha1.NetworkProfile {
	for _, p := range o.profiles {
		if granted[p] < maxInterfaces(p) {
			return p
		}
	}
	return nil
}

func countFor(o *offer, granted map[*v1alpha1.NetworkProfile]int) int {
	n := 0
	for _, p := range o.profiles {
		n += granted[p]
	}
	return n
}

func maxList(ps []*v1alpha1.NetworkProfile) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprint(maxInterfaces(p))
	}
	return strings.Join(parts, "+")
}

// resolvePrimary checks the primary interface MTU against the first profile
// (by name) whose primaryInterface range allows it.
func (s scope) resolvePrimary(p *field.Path, r NetworkRequest) (int32, *v1alpha1.NetworkProfile, field.ErrorList) {
	var limits []string
	for _, prof := range s.profiles {
		pi := prof.Spec.PrimaryInterface
		if pi == nil {
			continue
		}
		if err := checkMTURange(&pi.MTU); err != nil {
			limits = append(limits, fmt.Sprintf("none (profile %q %s; an admin must fix it)", prof.Name, err))
			continue
		}
		lo, hi := mtuBounds(&pi.MTU)
		if r.MTU >= lo && r.MTU <= hi {
			return r.MTU, prof, nil
		}
		limits = append(limits, fmt.Sprintf("%d-%d (profile %q)", lo, hi, prof.Name))
	}
	if len(limits) == 0 {
		return 0, nil, field.ErrorList{field.Invalid(p.Child("mtu"), r.MTU, fmt.Sprintf("primary interface %s: no profile for namespace %q allows tuning it", PrimaryInterfaceName, s.namespace))}
	}
	return 0, nil, field.ErrorList{field.Invalid(p.Child("mtu"), r.MTU, fmt.Sprintf("primary interface %s: outside the allowed mtu %s", PrimaryInterfaceName, strings.Join(limits, ", ")))}
}

// resolveInterface applies one network's limits and defaults to a request.
func resolveInterface(p *field.Path, r NetworkRequest, n *v1alpha1.Network, prof *v1alpha1.NetworkProfile) (v1alpha1.ApprovedInterface, field.ErrorList) {
	lim := limit{network: r.Name, profile: prof.Name}
	a := v1alpha1.ApprovedInterface{Interface: r.Interface, Network: r.Name, Profile: prof.Name}
	if err := checkNetwork(n); err != nil {
		return a, field.ErrorList{field.Invalid(p.Child("name"), r.Name, lim.admin(err.Error()))}
	}
	var vlans *v1alpha1.VLANPolicy
	switch {
	case n.Bridge != nil:
		a.Kind, a.Bridge, vlans = v1alpha1.KindBridge, n.Bridge.Name, n.Bridge.VLAN
	case n.Macvlan != nil:
		a.Kind, a.Master, a.Mode = v1alpha1.KindMacvlan, n.Macvlan.Master, orDefault(n.Macvlan.Mode, DefaultMacvlanMode)
	case n.IPVlan != nil:
		a.Kind, a.Master, a.Mode = v1alpha1.KindIPVlan, n.IPVlan.Master, orDefault(n.IPVlan.Mode, DefaultIPVlanMode)
	case n.VLAN != nil:
		a.Kind, a.Master, vlans = v1alpha1.KindVLAN, n.VLAN.Master, &n.VLAN.VLAN
	}
	var errs field.ErrorList
	var e field.ErrorList
	a.VLAN, e = lim.resolveVLAN(p.Child("vlan"), r.VLAN, vlans, a.Kind)
	errs = append(errs, e...)
	a.MTU, e = lim.resolveMTU(p.Child("mtu"), r.MTU, n.MTU)
	errs = append(errs, e...)
	a.MAC, e = lim.resolveMAC(p.Child("mac"), r.MAC, n.AllowStaticMAC)
	errs = append(errs, e...)
	a.IPAM, e = lim.resolveIPAM(p.Child("ips"), r.IPs, n.IPAM)
	errs = append(errs, e...)
	a.Routes, e = lim.resolveRoutes(p.Child("routes"), r.Routes, n.Routes, n.IPAM)
	errs = append(errs, e...)
	return a, errs
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// limit names the network and profile in every message about a limit.
type limit struct{ network, profile string }

func (l limit) msg(format string, args ...any) string {
	return fmt.Sprintf("network %q: ", l.network) + fmt.Sprintf(format, args...)
}

// admin words a broken profile, which the tenant cannot fix.
func (l limit) admin(what string) string {
	return fmt.Sprintf("network %q: profile %q %s; an admin must fix the profile", l.network, l.profile, what)
}

func mtuBounds(r *v1alpha1.MTURange) (int32, int32) {
	lo, hi := int32(minMTU), int32(maxMTU)
	if r.Min != nil {
		lo = *r.Min
	}
	if r.Max != nil {
		hi = *r.Max
	}
	return lo, hi
}

// checkMTURange refuses a range the CRD's rules would have refused, so a
// profile that bypassed them is an admin error instead of a bad MTU.
func checkMTURange(r *v1alpha1.MTURange) error {
	lo, hi := mtuBounds(r)
	switch {
	case lo < minMTU || hi > maxMTU || lo > hi:
		return fmt.Errorf("has mtu range %d-%d, not within %d-%d in ascending order", lo, hi, minMTU, maxMTU)
	case r.Default != nil && (*r.Default < lo || *r.Default > hi):
		return fmt.Errorf("has default mtu %d outside its range %d-%d", *r.Default, lo, hi)
	}
	return nil
}

func (l limit) resolveMTU(p *field.Path, want int32, r *v1alpha1.MTURange) (int32, field.ErrorList) {
	if r != nil {
		if err := checkMTURange(r); err != nil {
			return 0, field.ErrorList{field.Invalid(p, want, l.admin(err.Error()))}
		}
	}
	if want == 0 {
		if r != nil && r.Default != nil {
			return *r.Default, nil
		}
		return 0, nil
	}
	if r == nil {
		return 0, field.ErrorList{field.Invalid(p, want, l.msg("profile %q sets no mtu range, so the mtu cannot be chosen", l.profile))}
	}
	lo, hi := mtuBounds(r)
	switch {
	case want < lo:
		return 0, field.ErrorList{field.Invalid(p, want, l.msg("below the minimum mtu %d of profile %q (allowed %d-%d)", lo, l.profile, lo, hi))}
	case want > hi:
		return 0, field.ErrorList{field.Invalid(p, want, l.msg("above the maximum mtu %d of profile %q (allowed %d-%d)", hi, l.profile, lo, hi))}
	}
	return want, nil
}

func (l limit) resolveVLAN(p *field.Path, want int32, v *v1alpha1.VLANPolicy, kind v1alpha1.NetworkKind) (int32, field.ErrorList) {
	if v == nil {
		if want != 0 {
			return 0, field.ErrorList{field.Invalid(p, want, l.msg("profile %q offers it as a %s network without VLANs, so no vlan can be chosen", l.profile, kind))}
		}
		return 0, nil
	}
	if v.Default == nil && len(v.Allowed) == 0 {
		return 0, field.ErrorList{field.Invalid(p, want, l.admin("has neither a default nor allowed vlans"))}
	}
	ranges, err := parseVLANRanges(v.Allowed)
	if err != nil {
		return 0, field.ErrorList{field.Invalid(p, want, l.admin(err.Error()))}
	}
	if v.Default != nil && (*v.Default < 1 || *v.Default > 4094) {
		return 0, field.ErrorList{field.Invalid(p, want, l.admin(fmt.Sprintf("has default vlan %d outside 1-4094", *v.Default)))}
	}
	if want == 0 {
		if v.Default != nil {
			return *v.Default, nil
		}
		return 0, field.ErrorList{field.Required(p, l.msg("profile %q has no default vlan; ask for one of %s", l.profile, describeVLANs(v)))}
	}
	if (v.Default != nil && *v.Default == want) || ranges.contains(want) {
		return want, nil
	}
	return 0, field.ErrorList{field.Invalid(p, want, l.msg("vlan not allowed by profile %q, which allows %s", l.profile, describeVLANs(v)))}
}

func (l limit) resolveMAC(p *field.Path, want string, allowed bool) (string, field.ErrorList) {
	if want == "" {
		return "", nil
	}
	if !allowed {
		return "", field.ErrorList{field.Invalid(p, want, l.msg("profile %q does not allow static MAC addresses (allowStaticMAC is false)", l.profile))}
	}
	mac, err := net.ParseMAC(want)
	if err != nil || len(mac) != 6 {
		return "", field.ErrorList{field.Invalid(p, want, l.msg("not an Ethernet MAC address"))}
	}
	if mac[0]&1 != 0 || isZero(mac) {
		return "", field.ErrorList{field.Invalid(p, want, l.msg("not a unicast MAC address (the first octet must be even, and not all zeros)"))}
	}
	return mac.String(), nil
}

func isZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// resolveIPAM approves the pools and checks static addresses: each inside a
// pool, with the pool's prefix length, and never the pool's network,
// broadcast or gateway address.
func (l limit) resolveIPAM(p *field.Path, want []string, ipam *v1alpha1.IPAM) (*v1alpha1.ApprovedIPAM, field.ErrorList) {
	if ipam == nil {
		if len(want) > 0 {
			return nil, field.ErrorList{field.Invalid(p, strings.Join(want, ", "), l.msg("profile %q gives this network no addresses (no ipam), so no ips can be chosen", l.profile))}
		}
		return nil, nil
	}
	pools, gws, err := parseIPAM(ipam)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(p, strings.Join(want, " "), l.admin(err.Error()))}
	}
	out := &v1alpha1.ApprovedIPAM{Pools: prefixStrings(pools)}
	for _, g := range gws {
		out.Gateways = append(out.Gateways, g.String())
	}
	if len(want) > 0 && !ipam.AllowStatic {
		return nil, field.ErrorList{field.Invalid(p, strings.Join(want, ", "), l.msg("profile %q does not allow static addresses (ipam.allowStatic is false)", l.profile))}
	}
	var errs field.ErrorList
	for i, s := range want {
		pfx, err := parsePrefix(s)
		if err != nil {
			errs = append(errs, field.Invalid(p.Index(i), s, l.msg("not an address in CIDR notation")))
			continue
		}
		if why := staticProblem(pfx, pools, gws); why != "" {
			errs = append(errs, field.Invalid(p.Index(i), s, l.msg("%s (profile %q pools %s)", why, l.profile, strings.Join(out.Pools, ", "))))
			continue
		}
		out.Static = append(out.Static, pfx.String())
	}
	return out, errs
}

// staticProblem says why a static address is refused, or "".
func staticProblem(a netip.Prefix, pools []netip.Prefix, gws []netip.Addr) string {
	addr := a.Addr()
	for _, pool := range pools {
		if !pool.Contains(addr) {
			continue
		}
		if a.Bits() != pool.Bits() {
			return fmt.Sprintf("prefix length must be /%d like pool %s", pool.Bits(), pool)
		}
		if why := v1alpha1.ReservedInPool(pool, addr); why != "" {
			return fmt.Sprintf("%s is the %s of pool %s", addr, why, pool)
		}
		for _, g := range gws {
			if g == addr {
				return fmt.Sprintf("%s is the gateway of pool %s", addr, pool)
			}
		}
		return ""
	}
	return "outside every pool"
}

// parseIPAM parses pools and gateways and applies the CRD's CEL rules to
// them again, for profiles stored before a rule existed: a profile that
// fails is an admin error, never guessed at.
func parseIPAM(ipam *v1alpha1.IPAM) ([]netip.Prefix, []netip.Addr, error) {
	pools := make([]netip.Prefix, 0, len(ipam.Pools))
	for _, s := range ipam.Pools {
		p, err := parsePrefix(s)
		if err != nil {
			return nil, nil, fmt.Errorf("has pool %q that is not a CIDR: %w", s, err)
		}
		if p != p.Masked() {
			return nil, nil, fmt.Errorf("has pool %q with host bits set", s)
		}
		for _, q := range pools {
			if q.Addr().Is4() == p.Addr().Is4() {
				return nil, nil, fmt.Errorf("has two %s pools (%s and %s)", familyName(p.Addr().Is4()), q, p)
			}
		}
		pools = append(pools, p)
	}
	gws := make([]netip.Addr, 0, len(ipam.Gateways))
	for _, s := range ipam.Gateways {
		g, err := parseAddr(s)
		if err != nil {
			return nil, nil, fmt.Errorf("has gateway %q that is not an IP address: %w", s, err)
		}
		if poolOf(pools, g) == nil {
			return nil, nil, fmt.Errorf("has gateway %s outside its pools", g)
		}
		for _, h := range gws {
			if h.Is4() == g.Is4() {
				return nil, nil, fmt.Errorf("has two %s gateways (%s and %s)", familyName(g.Is4()), h, g)
			}
		}
		gws = append(gws, g)
	}
	return pools, gws, nil
}

func poolOf(pools []netip.Prefix, a netip.Addr) *netip.Prefix {
	for i := range pools {
		if pools[i].Contains(a) {
			return &pools[i]
		}
	}
	return nil
}

func prefixStrings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// resolveRoutes checks each route's destination against routes.allowed and
// its gateway against the network's pools; a route without a gateway gets
// the network's gateway of its family, or is on-link when there is none.
func (l limit) resolveRoutes(p *field.Path, want []RouteRequest, pol *v1alpha1.RoutePolicy, ipam *v1alpha1.IPAM) ([]v1alpha1.ApprovedRoute, field.ErrorList) {
	if pol == nil {
		if len(want) > 0 {
			return nil, field.ErrorList{field.Invalid(p, routeDsts(want), l.msg("profile %q allows no routes (no routes.allowed)", l.profile))}
		}
		return nil, nil
	}
	// Checked even when no route is asked for: a broken profile is refused
	// as a whole, so its admin hears of it at once.
	allowed := make([]netip.Prefix, 0, len(pol.Allowed))
	for _, s := range pol.Allowed {
		a, err := parsePrefix(s)
		if err != nil || a != a.Masked() {
			return nil, field.ErrorList{field.Invalid(p, routeDsts(want), l.admin(fmt.Sprintf("has routes.allowed %q that is not a network CIDR", s)))}
		}
		allowed = append(allowed, a)
	}
	if len(want) == 0 {
		return nil, nil
	}
	var pools []netip.Prefix
	var gws []netip.Addr
	if ipam != nil {
		var err error
		if pools, gws, err = parseIPAM(ipam); err != nil {
			return nil, field.ErrorList{field.Invalid(p, "", l.admin(err.Error()))}
		}
	}
	var out []v1alpha1.ApprovedRoute
	var errs field.ErrorList
	for i, r := range want {
		rp := p.Index(i)
		dst, err := parsePrefix(r.Dst)
		if err != nil {
			errs = append(errs, field.Invalid(rp.Child("dst"), r.Dst, l.msg("not a CIDR")))
			continue
		}
		if !within(dst, allowed) {
			errs = append(errs, field.Invalid(rp.Child("dst"), r.Dst, l.msg("destination outside the routes allowed by profile %q (%s)", l.profile, strings.Join(pol.Allowed, ", "))))
			continue
		}
		route := v1alpha1.ApprovedRoute{Dst: dst.Masked().String()}
		if r.Gateway != "" {
			gw, err := parseAddr(r.Gateway)
			if err != nil {
				errs = append(errs, field.Invalid(rp.Child("gateway"), r.Gateway, l.msg("not an IP address")))
				continue
			}
			if poolOf(pools, gw) == nil {
				errs = append(errs, field.Invalid(rp.Child("gateway"), r.Gateway, l.msg("gateway outside the pools of profile %q (%s)", l.profile, strings.Join(prefixStrings(pools), ", "))))
				continue
			}
			route.Gateway = gw.String()
		} else {
			for _, g := range gws {
				if g.Is4() == dst.Addr().Is4() {
					route.Gateway = g.String()
					break
				}
			}
		}
		out = append(out, route)
	}
	return out, errs
}

func routeDsts(rs []RouteRequest) string {
	dsts := make([]string, len(rs))
	for i, r := range rs {
		dsts[i] = r.Dst
	}
	return strings.Join(dsts, ", ")
}

func within(dst netip.Prefix, allowed []netip.Prefix) bool {
	for _, a := range allowed {
		if a.Addr().Is4() == dst.Addr().Is4() && a.Bits() <= dst.Bits() && a.Contains(dst.Addr()) {
			return true
		}
	}
	return false
}

// podUsage finds clashes between a pod's interfaces that each look fine on
// their own: the same static address twice, or two VLAN subinterfaces of
// the same link and VLAN (the kernel allows only one).
type podUsage struct {
	static map[string]string
	vlans  map[string]string
}

func newPodUsage() podUsage {
	return podUsage{static: map[string]string{}, vlans: map[string]string{}}
}

func (u podUsage) add(p *field.Path, a v1alpha1.ApprovedInterface) field.ErrorList {
	var errs field.ErrorList
	if a.Kind == v1alpha1.KindVLAN {
		key := fmt.Sprintf("%s.%d", a.Master, a.VLAN)
		if prev, dup := u.vlans[key]; dup {
			errs = append(errs, field.Invalid(p.Child("vlan"), a.VLAN, fmt.Sprintf("network %q: interface %s already is the pod's subinterface of %s for this vlan (one per link and vlan)", a.Network, prev, a.Master)))
		}
		u.vlans[key] = a.Interface
	}
	if a.IPAM != nil {
		for i, s := range a.IPAM.Static {
			addr := strings.SplitN(s, "/", 2)[0]
			if prev, dup := u.static[addr]; dup {
				errs = append(errs, field.Invalid(p.Child("ips").Index(i), s, fmt.Sprintf("network %q: address already given to interface %s of this pod", a.Network, prev)))
			}
			u.static[addr] = a.Interface
		}
	}
	return errs
}
