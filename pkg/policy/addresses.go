package policy

import (
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam/rules"
)

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
	// The address space and its quota are the same for every profile on
	// it: decide sets them (withQuota).
	out := &v1alpha1.ApprovedIPAM{Pools: prefixStrings(pools), Persistent: approvePersistence(ipam.Persistent)}
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
		if why := rules.ReservedInPool(pool, addr); why != "" {
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
	if _, _, _, err := capOf(ipam); err != nil {
		return nil, nil, err
	}
	return pools, gws, nil
}

// MaxAddressesPerNamespace is the largest ipam.maxAddressesPerNamespace (the
// CRD's bound too): quota slots are numbered below it, and an allocation
// tries a bounded number of them.
const MaxAddressesPerNamespace = 4096

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
