package policy

import (
	"fmt"
	"net"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// The MTU bounds used when a profile's MTURange leaves one open; they are
// the CRD's own limits.
const (
	minMTU = 576
	maxMTU = 65535
)

// resolveInterface applies one network's limits and defaults to a request.
func resolveInterface(p *field.Path, r NetworkRequest, n *v1alpha1.Network, prof *v1alpha1.NetworkProfile) (v1alpha1.ApprovedInterface, field.ErrorList) {
	lim := limit{network: r.Name, profile: prof.Name}
	a := v1alpha1.ApprovedInterface{
		Interface: r.Interface, Network: r.Name, Profile: prof.Name, RawSockets: n.AllowRawSockets,
		PortSecurityDisabled: n.PortSecurity != nil && n.PortSecurity.Disabled,
		Router:               n.PortSecurity != nil && n.PortSecurity.AllowRouters,
		AcceptRA:             n.AcceptRouterAdvertisements,
	}
	if c := n.AddressCheck; c != nil {
		a.CheckDuplicates, a.CheckGateway = c.Duplicates, c.Gateway
	}
	if err := checkNetwork(n); err != nil {
		return a, field.ErrorList{field.Invalid(p.Child("name"), r.Name, lim.admin(err.Error()))}
	}
	k, _ := kindOf(n) // checkNetwork found exactly one
	k.approve(n, &a)
	vlans, _ := networkVLANs(n)
	var errs field.ErrorList
	var e field.ErrorList
	a.VLAN, e = lim.resolveVLAN(p.Child("vlan"), r.VLAN, vlans, a.Kind)
	errs = append(errs, e...)
	a.MTU, e = lim.resolveMTU(p.Child("mtu"), r.MTU, n.MTU)
	errs = append(errs, e...)
	if k.mtuLimit != nil && len(e) == 0 {
		if most, why := k.mtuLimit(n); most > 0 {
			a.MTU, e = lim.capMTU(p.Child("mtu"), a.MTU, most, why, r.MTU == 0)
			errs = append(errs, e...)
		}
	}
	a.MAC, a.MACRange, e = lim.resolveMACs(p.Child("mac"), r.MAC, n)
	errs = append(errs, e...)
	a.IPAM, e = lim.resolveIPAM(p.Child("ips"), r.IPs, n.IPAM)
	errs = append(errs, e...)
	a.Routes, e = lim.resolveRoutes(p.Child("routes"), r.Routes, n.Routes, n.IPAM)
	errs = append(errs, e...)
	a.DefaultRoute, e = lim.resolveDefaultRoute(p.Child("default-route"), r.DefaultRoute, n)
	errs = append(errs, e...)
	a.VRF, e = lim.resolveVRF(p.Child("vrf"), r.VRF, n)
	errs = append(errs, e...)
	a.Settings, e = lim.resolveSettings(p.Child("settings"), r.Settings, n, a.IPAM)
	errs = append(errs, e...)
	a.SLAAC, e = lim.resolveSLAAC(p.Child("slaac"), r.SLAAC, n)
	errs = append(errs, e...)
	a.Offloads, e = lim.resolveOffloads(p.Child("offloads"), r.Offloads, n)
	errs = append(errs, e...)
	errs = append(errs, lim.resolveTunnel(p, r, n, &a)...)
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
	if g := gatewayMAC(mac); g != "" {
		return "", field.ErrorList{field.Invalid(p, want, l.msg("%s: a pod's mac must not be a gateway's", g))}
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
