package policy

import (
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// validateDefaultRoute checks one element's "default-route" (Multus' key):
// gateway addresses, at most one per family.
func validateDefaultRoute(p *field.Path, r *NetworkRequest) field.ErrorList {
	if r.DefaultRoute == nil {
		return nil
	}
	if len(r.DefaultRoute) == 0 {
		return field.ErrorList{field.Required(p, fmt.Sprintf("network %q: name the gateway(s) the pod's default route goes via, e.g. [\"192.168.100.1\"]", r.Name))}
	}
	var errs field.ErrorList
	seen := map[bool]string{}
	for j, s := range r.DefaultRoute {
		gw, err := parseAddr(s)
		if err != nil {
			errs = append(errs, field.Invalid(p.Index(j), s, fmt.Sprintf("network %q: not an IP address: %v", r.Name, err)))
			continue
		}
		if prev, dup := seen[gw.Is4()]; dup {
			errs = append(errs, field.Invalid(p.Index(j), s, fmt.Sprintf("network %q: one default gateway per family, and %s is one", r.Name, prev)))
			continue
		}
		seen[gw.Is4()] = s
	}
	return errs
}

// validateDefaultRoutes refuses two elements that ask for the default route
// of one family: a pod has one default route per family.
func validateDefaultRoutes(reqs []NetworkRequest) field.ErrorList {
	var errs field.ErrorList
	owner := map[bool]int{}
	for i, r := range reqs {
		for j, s := range r.DefaultRoute {
			gw, err := parseAddr(s)
			if err != nil {
				continue
			}
			if k, dup := owner[gw.Is4()]; dup && k != i {
				errs = append(errs, field.Invalid(annotationPath.Index(i).Child("default-route").Index(j), s, fmt.Sprintf("network %q: the pod's %s default route is already asked for by element %d (network %q)", r.Name, familyName(gw.Is4()), k, reqs[k].Name)))
				continue
			}
			owner[gw.Is4()] = i
		}
	}
	return errs
}

// resolveDefaultRoute approves "default-route" where the profile lets the
// network carry the pod's default route, via gateways of the network only:
// a tenant must not steer the pod's traffic to an address the admin did not
// name as a way out.
func (l limit) resolveDefaultRoute(p *field.Path, gws []string, n *v1alpha1.Network) ([]string, field.ErrorList) {
	if gws == nil {
		return nil, nil
	}
	if n.DefaultRoute == nil || !n.DefaultRoute.Allowed {
		return nil, field.ErrorList{field.Forbidden(p, l.msg("profile %q does not let this network carry the pod's default route (defaultRoute.allowed); it stays on eth0", l.profile))}
	}
	var allowed []string
	if n.IPAM != nil {
		allowed = n.IPAM.Gateways
	}
	var out []string
	var errs field.ErrorList
	for j, s := range gws {
		gw := netip.MustParseAddr(s) // validateDefaultRoute parsed it
		if !containsAddr(allowed, gw) {
			errs = append(errs, field.Invalid(p.Index(j), s, l.msg("the default route may go via the network's gateways only (profile %q: %s)", l.profile, orNone(allowed))))
			continue
		}
		out = append(out, gw.String())
	}
	return out, errs
}

func containsAddr(list []string, a netip.Addr) bool {
	for _, s := range list {
		if b, err := netip.ParseAddr(s); err == nil && b == a {
			return true
		}
	}
	return false
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}
