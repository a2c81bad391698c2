package policy

import (
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ifsettings"
)

// The knobs of one interface a tenant may turn, each within what its
// network offers: kernel settings by name, ethtool offloads, SLAAC.

// resolveSettings judges the per-interface settings a tenant asked for:
// each must be in pkg/ifsettings' table (a name, never a path), and be
// either the interface's default (always allowed: it is what the
// interface has unasked) or within both the network's range for it and
// what the kernel takes. disable_ipv6 1 is refused on an interface that
// gets IPv6 addresses.
func (l limit) resolveSettings(p *field.Path, want map[string]int64, n *v1alpha1.Network, ipam *v1alpha1.ApprovedIPAM) (map[string]int64, field.ErrorList) {
	if len(want) == 0 {
		return nil, nil
	}
	var errs field.ErrorList
	out := map[string]int64{}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		v, fp := want[name], p.Key(name)
		s, ok := ifsettings.Lookup(name)
		if !ok {
			errs = append(errs, field.NotSupported(fp, name, ifsettings.Names()))
			continue
		}
		if err := s.Check(v); err != nil {
			errs = append(errs, field.Invalid(fp, v, l.msg("%v", err)))
			continue
		}
		r := settingRange(n, name)
		switch def := settingDefault(s, n); {
		case v == def:
		case r == nil:
			errs = append(errs, field.Forbidden(fp, l.msg("profile %q does not let tenants choose %s (settings does not list it); only its default %d may be asked for", l.profile, name, def)))
			continue
		case v < r.Min || v > r.Max:
			errs = append(errs, field.Invalid(fp, v, l.msg("%s must be within %d–%d, the range profile %q allows", name, r.Min, r.Max, l.profile)))
			continue
		}
		if name == "disable_ipv6" && v == 1 && hasIPv6(ipam) {
			errs = append(errs, field.Invalid(fp, v, l.msg("disable_ipv6 1 would take away the IPv6 addresses the network gives the interface")))
			continue
		}
		out[name] = v
	}
	return out, errs
}

// settingDefault is the value an interface of the network has when nobody
// asks: the table's, except accept_ra, which podnet keeps at 0 on a
// network that does not take router advertisements. Asking for it is
// always allowed, so it must never be more than the network grants.
func settingDefault(s ifsettings.Setting, n *v1alpha1.Network) int64 {
	if s.Name == "accept_ra" && !n.AcceptRouterAdvertisements {
		return 0
	}
	return s.Default
}

// settingWithin is the value a running interface's setting v comes to
// when the network no longer allows v: the nearest value of the range, or
// the default when the network no longer lists the setting.
func settingWithin(name string, v int64, n *v1alpha1.Network) int64 {
	s, ok := ifsettings.Lookup(name)
	r := settingRange(n, name)
	if !ok || r == nil {
		return settingDefault(s, n)
	}
	return min(max(v, r.Min, s.Min), r.Max, s.Max)
}

func settingRange(n *v1alpha1.Network, name string) *v1alpha1.SettingRange {
	i := slices.IndexFunc(n.Settings, func(r v1alpha1.SettingRange) bool { return r.Name == name })
	if i < 0 {
		return nil
	}
	return &n.Settings[i]
}

// hasIPv6 says whether the interface gets an IPv6 address.
func hasIPv6(ipam *v1alpha1.ApprovedIPAM) bool {
	if ipam == nil {
		return false
	}
	for _, c := range slices.Concat(ipam.Pools, ipam.Static) {
		ip, _, err := net.ParseCIDR(c)
		if err == nil && ip.To4() == nil {
			return true
		}
	}
	return false
}

// describeSetting words a setting's narrowing.
func describeSetting(name string, from, to int64) string {
	return fmt.Sprintf("setting %s %d changed to %d", name, from, to)
}

// resolveSLAAC grants SLAAC where the network takes router
// advertisements: elsewhere podnet keeps them out, so no address could come.
func (l limit) resolveSLAAC(p *field.Path, want bool, n *v1alpha1.Network) (bool, field.ErrorList) {
	if want && !n.AcceptRouterAdvertisements {
		return false, field.ErrorList{field.Forbidden(p, l.msg("profile %q does not let this network's interfaces take router advertisements (acceptRouterAdvertisements is not set), so no address could come by SLAAC", l.profile))}
	}
	return want, nil
}

// resolveOffloads grants the ethtool features a tenant turns on or off
// where the network lists them, by their exact name.
func (l limit) resolveOffloads(p *field.Path, want map[string]bool, n *v1alpha1.Network) (map[string]bool, field.ErrorList) {
	if len(want) == 0 {
		return nil, nil
	}
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if !slices.Contains(n.Offloads, name) {
			errs = append(errs, field.Forbidden(p.Key(name), l.msg("profile %q does not let tenants change offload %s (offloads lists %s)", l.profile, name, orNone(n.Offloads))))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return maps.Clone(want), nil
}

// podnetAddresses are the held addresses of an approved interface that
// podnet gave it. With SLAAC its status also lists the addresses the
// kernel made from the network's router advertisements, which no pool of
// the approval holds: those are the router's to give and take, not the
// profile's, and a narrowing never judges them.
func podnetAddresses(ai v1alpha1.ApprovedInterface, held []netip.Addr) []netip.Addr {
	if !ai.SLAAC {
		return held
	}
	var pools []netip.Prefix
	if ai.IPAM != nil {
		for _, c := range ai.IPAM.Pools {
			if p, err := netip.ParsePrefix(c); err == nil {
				pools = append(pools, p)
			}
		}
	}
	var out []netip.Addr
	for _, a := range held {
		if slices.ContainsFunc(pools, func(p netip.Prefix) bool { return p.Contains(a.Unmap()) }) {
			out = append(out, a)
		}
	}
	return out
}
