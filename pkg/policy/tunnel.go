package policy

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// wireGuardKeyLen is the length of a WireGuard (Curve25519) key.
const wireGuardKeyLen = 32

// portRange is an inclusive range of UDP ports or VNIs.
type portRange struct{ lo, hi int64 }

// parseRanges parses "51820" and "51820-51829" entries within 1-max.
func parseRanges(what string, in []string, most int64) ([]portRange, error) {
	out := make([]portRange, 0, len(in))
	for _, s := range in {
		loS, hiS, isRange := strings.Cut(s, "-")
		if !isRange {
			hiS = loS
		}
		lo, err1 := strconv.ParseInt(loS, 10, 64)
		hi, err2 := strconv.ParseInt(hiS, 10, 64)
		if err1 != nil || err2 != nil || lo < 1 || hi > most || lo > hi {
			return nil, fmt.Errorf("has %s %q that is not within 1-%d in ascending order", what, s, most)
		}
		out = append(out, portRange{lo, hi})
	}
	return out, nil
}

func inRanges(rs []portRange, v int64) bool {
	return slices.ContainsFunc(rs, func(r portRange) bool { return v >= r.lo && v <= r.hi })
}

// endpointRule is one parsed tunnel.endpoints entry.
type endpointRule struct {
	cidr  netip.Prefix
	ports []portRange
}

// parseEndpoints parses the profile's allowed endpoints.
func parseEndpoints(t *v1alpha1.TunnelNetwork) ([]endpointRule, error) {
	if len(t.Endpoints) == 0 {
		return nil, fmt.Errorf("has no tunnel.endpoints")
	}
	out := make([]endpointRule, 0, len(t.Endpoints))
	for i, e := range t.Endpoints {
		c, err := parsePrefix(e.CIDR)
		if err != nil || c != c.Masked() {
			return nil, fmt.Errorf("has tunnel.endpoints[%d].cidr %q that is not a network CIDR", i, e.CIDR)
		}
		if len(e.Ports) == 0 {
			return nil, fmt.Errorf("has tunnel.endpoints[%d] without ports", i)
		}
		ports, err := parseRanges(fmt.Sprintf("tunnel.endpoints[%d].ports", i), e.Ports, 65535)
		if err != nil {
			return nil, err
		}
		out = append(out, endpointRule{cidr: c, ports: ports})
	}
	return out, nil
}

// checkTunnel refuses a tunnel network the CRD would have refused.
func checkTunnel(n *v1alpha1.Network) error {
	t := n.Tunnel
	if (t.WireGuard != nil) == (t.VXLAN != nil) {
		return fmt.Errorf("sets %s of tunnel.wireguard and tunnel.vxlan instead of exactly one", map[bool]string{true: "both", false: "neither"}[t.WireGuard != nil])
	}
	if _, err := parseEndpoints(t); err != nil {
		return err
	}
	if t.WireGuard != nil && t.Underlay != nil {
		return fmt.Errorf("sets tunnel.underlay on a wireguard tunnel, which sends by the node's routes")
	}
	if t.WireGuard != nil && (n.AllowStaticMAC || n.MACRange != nil) {
		return fmt.Errorf("sets allowStaticMAC or macRange on a wireguard tunnel, whose device has no MAC address")
	}
	if x := t.VXLAN; x != nil {
		if (x.VNI != nil) == (len(x.VNIs) > 0) {
			return fmt.Errorf("sets %s of tunnel.vxlan.vni and .vnis instead of exactly one", map[bool]string{true: "both", false: "neither"}[x.VNI != nil])
		}
		if x.VNI != nil && (*x.VNI < 1 || *x.VNI > maxVNI) {
			return fmt.Errorf("has tunnel.vxlan.vni %d outside 1-%d", *x.VNI, maxVNI)
		}
		if _, err := parseRanges("tunnel.vxlan.vnis", x.VNIs, maxVNI); err != nil {
			return err
		}
	}
	if u := t.Underlay; u != nil {
		if (u.Interface == "") == (u.Address == "") {
			return fmt.Errorf("sets %s of tunnel.underlay.interface and .address instead of exactly one", map[bool]string{true: "both", false: "neither"}[u.Interface != ""])
		}
		if u.Interface != "" {
			return checkLinkName("tunnel.underlay.interface", u.Interface)
		}
		if _, err := parseAddr(u.Address); err != nil {
			return fmt.Errorf("has tunnel.underlay.address %q that is not an IP address", u.Address)
		}
	}
	return nil
}

// approveTunnel writes the admin's half of the tunnel: its kind and the
// underlay. The tenant's half comes from resolveTunnel.
func approveTunnel(kind v1alpha1.NetworkKind) func(n *v1alpha1.Network, a *v1alpha1.ApprovedInterface) {
	return func(n *v1alpha1.Network, a *v1alpha1.ApprovedInterface) {
		a.Kind, a.Tunnel = kind, &v1alpha1.ApprovedTunnel{}
		if u := n.Tunnel.Underlay; u != nil {
			a.Tunnel.LocalInterface, a.Tunnel.LocalAddress = u.Interface, u.Address
		}
	}
}

// describeTunnel words a tunnel network's limits for denial messages.
func describeTunnel(n *v1alpha1.Network) []string {
	t := n.Tunnel
	out := []string{"tunnel to " + describeEndpoints(t)}
	if x := t.VXLAN; x != nil {
		if x.VNI != nil {
			out = append(out, fmt.Sprintf("vxlan vni %d", *x.VNI))
		} else {
			out = append(out, "vxlan vnis "+strings.Join(x.VNIs, ","))
		}
	} else {
		out = append(out, "wireguard")
	}
	return out
}

func describeEndpoints(t *v1alpha1.TunnelNetwork) string {
	parts := make([]string, len(t.Endpoints))
	for i, e := range t.Endpoints {
		parts[i] = e.CIDR + " ports " + strings.Join(e.Ports, ",")
	}
	return strings.Join(parts, "; ")
}

// validateTunnelRequest checks the tunnel fields of a request element on
// their own: syntax only, no policy.
func validateTunnelRequest(p *field.Path, r *NetworkRequest) field.ErrorList {
	var errs field.ErrorList
	if r.Endpoint != "" {
		if _, err := parseEndpoint(r.Endpoint); err != nil {
			errs = append(errs, field.Invalid(p.Child("endpoint"), r.Endpoint, fmt.Sprintf("network %q: %v", r.Name, err)))
		}
	}
	if r.PublicKey != "" {
		if err := checkPublicKey(r.PublicKey); err != nil {
			errs = append(errs, field.Invalid(p.Child("publicKey"), r.PublicKey, fmt.Sprintf("network %q: %v", r.Name, err)))
		}
	}
	for j, s := range r.AllowedIPs {
		if c, err := parsePrefix(s); err != nil || c != c.Masked() {
			errs = append(errs, field.Invalid(p.Child("allowedIPs").Index(j), s, fmt.Sprintf("network %q: not a network CIDR (10.60.0.0/16)", r.Name)))
		}
	}
	if r.VNI < 0 || r.VNI > maxVNI {
		errs = append(errs, field.Invalid(p.Child("vni"), r.VNI, fmt.Sprintf("network %q: vni must be within 1-%d", r.Name, maxVNI)))
	}
	return errs
}

// parseEndpoint parses "ip:port" ("[ip6]:port") with the address rules of
// parseAddr and a port of 1-65535.
func parseEndpoint(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("not an endpoint ip:port ([ip6]:port): %w", err)
	}
	if _, err := parseAddr(ap.Addr().String()); err != nil || ap.Addr().Zone() != "" || ap.Addr().Is4In6() {
		return netip.AddrPort{}, fmt.Errorf("not an endpoint ip:port: write a plain IPv4 or IPv6 address")
	}
	if ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("port 0")
	}
	if !ap.Addr().IsGlobalUnicast() {
		return netip.AddrPort{}, fmt.Errorf("not a unicast address (loopback, link-local, multicast and unspecified addresses are no endpoints)")
	}
	return ap, nil
}

// checkPublicKey accepts the base64 of a 32-byte key, as wg(8) prints it.
func checkPublicKey(s string) error {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != wireGuardKeyLen {
		return fmt.Errorf("not a WireGuard public key (the base64 of 32 bytes, as `wg pubkey` prints it)")
	}
	return nil
}

// resolveTunnel resolves the tenant's half of a tunnel (endpoint, peer
// key, allowed IPs, VNI) against the network, or refuses the tunnel
// fields on a network that is no tunnel. a carries the network's own half
// (approveTunnel) and, for the allowed IPs, its resolved routes.
func (l limit) resolveTunnel(p *field.Path, r NetworkRequest, n *v1alpha1.Network, a *v1alpha1.ApprovedInterface) field.ErrorList {
	if n.Tunnel == nil {
		return l.refuseTunnelFields(p, r)
	}
	t := n.Tunnel
	var errs field.ErrorList
	rules, err := parseEndpoints(t)
	if err != nil {
		return field.ErrorList{field.Invalid(p.Child("endpoint"), r.Endpoint, l.admin(err.Error()))}
	}
	switch ep, err := parseEndpoint(r.Endpoint); {
	case r.Endpoint == "":
		errs = append(errs, field.Required(p.Child("endpoint"), l.msg("a tunnel needs the remote endpoint ip:port; profile %q allows %s", l.profile, describeEndpoints(t))))
	case err != nil:
		errs = append(errs, field.Invalid(p.Child("endpoint"), r.Endpoint, l.msg("%v", err)))
	case !endpointAllowed(rules, ep):
		errs = append(errs, field.Invalid(p.Child("endpoint"), r.Endpoint, l.msg("endpoint not allowed by profile %q, which allows %s", l.profile, describeEndpoints(t))))
	default:
		a.Tunnel.Endpoint = ep.String()
	}
	if t.WireGuard != nil {
		errs = append(errs, l.resolveWireGuard(p, r, n, a)...)
	} else {
		errs = append(errs, l.resolveTunnelVNI(p, r, t.VXLAN, a)...)
	}
	return errs
}

// endpointAllowed says whether one of the rules holds the endpoint.
func endpointAllowed(rules []endpointRule, ep netip.AddrPort) bool {
	return slices.ContainsFunc(rules, func(e endpointRule) bool {
		return e.cidr.Contains(ep.Addr()) && inRanges(e.ports, int64(ep.Port()))
	})
}

// resolveWireGuard takes the peer's key and allowed IPs. The allowed IPs
// must lie within the network's pools or its routes.allowed (what the
// pod may reach through the interface anyway); absent, they are the
// pools and the approved routes' destinations.
func (l limit) resolveWireGuard(p *field.Path, r NetworkRequest, n *v1alpha1.Network, a *v1alpha1.ApprovedInterface) field.ErrorList {
	var errs field.ErrorList
	if r.VNI != 0 {
		errs = append(errs, field.Forbidden(p.Child("vni"), l.msg("a wireguard tunnel has no vni")))
	}
	switch {
	case r.PublicKey == "":
		errs = append(errs, field.Required(p.Child("publicKey"), l.msg("a wireguard tunnel needs the peer's public key (base64, as `wg pubkey` prints it)")))
	case checkPublicKey(r.PublicKey) != nil:
		errs = append(errs, field.Invalid(p.Child("publicKey"), r.PublicKey, l.msg("%v", checkPublicKey(r.PublicKey))))
	default:
		a.Tunnel.PeerPublicKey = r.PublicKey
	}
	var within []netip.Prefix
	if n.IPAM != nil {
		within = append(within, parsePrefixes(n.IPAM.Pools)...)
	}
	if n.Routes != nil {
		within = append(within, parsePrefixes(n.Routes.Allowed)...)
	}
	if len(r.AllowedIPs) == 0 {
		if n.IPAM != nil {
			a.Tunnel.AllowedIPs = slices.Clone(n.IPAM.Pools)
		}
		for _, rt := range a.Routes {
			if !slices.Contains(a.Tunnel.AllowedIPs, rt.Dst) {
				a.Tunnel.AllowedIPs = append(a.Tunnel.AllowedIPs, rt.Dst)
			}
		}
		return errs
	}
	for j, s := range r.AllowedIPs {
		c, err := parsePrefix(s)
		switch {
		case err != nil || c != c.Masked():
			errs = append(errs, field.Invalid(p.Child("allowedIPs").Index(j), s, l.msg("not a network CIDR")))
		case !coveredBy(c, within):
			errs = append(errs, field.Invalid(p.Child("allowedIPs").Index(j), s, l.msg("outside the pools and routes.allowed of profile %q (%s)", l.profile, strings.Join(prefixStrings(within), ", "))))
		default:
			a.Tunnel.AllowedIPs = append(a.Tunnel.AllowedIPs, c.String())
		}
	}
	return errs
}

// resolveTunnelVNI takes the VNI: the profile's fixed one, or one of its
// ranges the tenant names.
func (l limit) resolveTunnelVNI(p *field.Path, r NetworkRequest, x *v1alpha1.VXLANTunnel, a *v1alpha1.ApprovedInterface) field.ErrorList {
	var errs field.ErrorList
	if r.PublicKey != "" {
		errs = append(errs, field.Forbidden(p.Child("publicKey"), l.msg("a vxlan tunnel has no public key")))
	}
	if len(r.AllowedIPs) > 0 {
		errs = append(errs, field.Forbidden(p.Child("allowedIPs"), l.msg("a vxlan tunnel has no allowed IPs: routes say what goes through it")))
	}
	if x.VNI != nil {
		if r.VNI != 0 && r.VNI != *x.VNI {
			return append(errs, field.Invalid(p.Child("vni"), r.VNI, l.msg("profile %q fixes the vni at %d", l.profile, *x.VNI)))
		}
		a.Tunnel.VNI = *x.VNI
		return errs
	}
	ranges, err := parseRanges("tunnel.vxlan.vnis", x.VNIs, maxVNI)
	switch {
	case err != nil:
		return append(errs, field.Invalid(p.Child("vni"), r.VNI, l.admin(err.Error())))
	case r.VNI == 0:
		return append(errs, field.Required(p.Child("vni"), l.msg("profile %q lets the tenant choose the vni: ask for one of %s", l.profile, strings.Join(x.VNIs, ", "))))
	case !inRanges(ranges, int64(r.VNI)):
		return append(errs, field.Invalid(p.Child("vni"), r.VNI, l.msg("vni not allowed by profile %q, which allows %s", l.profile, strings.Join(x.VNIs, ", "))))
	}
	a.Tunnel.VNI = r.VNI
	return errs
}

// refuseTunnelFields refuses tunnel fields on a network that is no tunnel.
func (l limit) refuseTunnelFields(p *field.Path, r NetworkRequest) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name string
		set  bool
	}{{"endpoint", r.Endpoint != ""}, {"publicKey", r.PublicKey != ""}, {"allowedIPs", len(r.AllowedIPs) > 0}, {"vni", r.VNI != 0}} {
		if f.set {
			errs = append(errs, field.Forbidden(p.Child(f.name), l.msg("profile %q offers no tunnel network of this name", l.profile)))
		}
	}
	return errs
}

// parsePrefixes keeps the CIDRs that parse.
func parsePrefixes(in []string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range in {
		if c, err := parsePrefix(s); err == nil {
			out = append(out, c.Masked())
		}
	}
	return out
}

// coveredBy says whether c lies within one of the prefixes.
func coveredBy(c netip.Prefix, in []netip.Prefix) bool {
	return slices.ContainsFunc(in, func(w netip.Prefix) bool { return w.Bits() <= c.Bits() && w.Contains(c.Addr()) })
}

// tunnelRequest is the tenant's half of an approved tunnel, as the
// request that asked for it, for re-judging.
func tunnelRequest(r *NetworkRequest, t *v1alpha1.ApprovedTunnel) {
	if t == nil {
		return
	}
	r.Endpoint, r.PublicKey, r.VNI = t.Endpoint, t.PeerPublicKey, t.VNI
	r.AllowedIPs = slices.Clone(t.AllowedIPs)
}

// describeApprovedTunnel words how a tunnel is made, for detachedFields.
func describeApprovedTunnel(t *v1alpha1.ApprovedTunnel) string {
	if t == nil {
		return ""
	}
	s := fmt.Sprintf("endpoint %s", t.Endpoint)
	if t.PeerPublicKey != "" {
		s += " peer " + t.PeerPublicKey
	}
	if len(t.AllowedIPs) > 0 {
		s += " allowed " + strings.Join(t.AllowedIPs, ",")
	}
	if t.VNI != 0 {
		s += fmt.Sprintf(" vni %d", t.VNI)
	}
	if t.LocalInterface != "" {
		s += " underlay interface " + t.LocalInterface
	}
	if t.LocalAddress != "" {
		s += " underlay address " + t.LocalAddress
	}
	return s
}
