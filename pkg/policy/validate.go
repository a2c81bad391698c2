package policy

import (
	"fmt"
	"net/netip"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// ValidateNetworkProfile checks one profile on its own, with errors rooted
// at spec that name the field and the limit. It repeats the CRD's schema
// and CEL rules the policy relies on (a profile stored before a rule
// existed never went through them) and adds what CEL cannot say (CIDRs,
// VLAN ranges, MTU ranges). The webhook's scope builder, the
// NetworkProfile status reconciler and the tests all call it.
func ValidateNetworkProfile(p *v1alpha1.NetworkProfile) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if m := p.Spec.MaxInterfaces; m < 0 || m > maxMaxInterfaces {
		errs = append(errs, field.Invalid(spec.Child("maxInterfaces"), m, fmt.Sprintf("has maxInterfaces %d outside 1-%d", m, maxMaxInterfaces)))
	}
	if _, err := metav1.LabelSelectorAsSelector(&p.Spec.NamespaceSelector); err != nil {
		errs = append(errs, field.Invalid(spec.Child("namespaceSelector"), p.Spec.NamespaceSelector, fmt.Sprintf("has an invalid namespaceSelector: %v", err)))
	}
	seen := map[string]bool{}
	for i := range p.Spec.Networks {
		n := &p.Spec.Networks[i]
		np := spec.Child("networks").Index(i)
		if seen[n.Name] {
			errs = append(errs, field.Duplicate(np.Child("name"), n.Name))
		}
		seen[n.Name] = true
		errs = append(errs, validateNetwork(np, n)...)
	}
	if pi := p.Spec.PrimaryInterface; pi != nil {
		if err := checkMTURange(&pi.MTU); err != nil {
			errs = append(errs, field.Invalid(spec.Child("primaryInterface", "mtu"), pi.MTU, err.Error()))
		}
	}
	return errs
}

// profileWide keeps the errors that make the whole profile unusable; a
// network's own errors are reported when a pod asks for that network.
func profileWide(errs field.ErrorList) field.ErrorList {
	return errs.Filter(func(e error) bool {
		fe, ok := e.(*field.Error)
		return ok && fe.Field != "spec.maxInterfaces"
	})
}

// validateNetwork checks one network: exactly one kind with valid link
// names and modes, its MTU range, VLAN ranges, pools, gateways and routes.
func validateNetwork(p *field.Path, n *v1alpha1.Network) field.ErrorList {
	var errs field.ErrorList
	if err := checkNetwork(n); err != nil {
		errs = append(errs, field.Invalid(p, n.Name, err.Error()))
	}
	if n.MTU != nil {
		if err := checkMTURange(n.MTU); err != nil {
			errs = append(errs, field.Invalid(p.Child("mtu"), *n.MTU, err.Error()))
		}
	}
	if vlans, path := networkVLANs(n); vlans != nil {
		if _, err := parseVLANRanges(vlans.Allowed); err != nil {
			errs = append(errs, field.Invalid(p.Child(path[0], path[1:]...), vlans.Allowed, err.Error()))
		}
	}
	if n.MACRange != nil {
		errs = append(errs, ValidateMACRange(p.Child("macRange"), n.MACRange)...)
	}
	if n.VRF != nil {
		if _, err := parseTableRanges(n.VRF.Tables); err != nil {
			errs = append(errs, field.Invalid(p.Child("vrf", "tables"), n.VRF.Tables, err.Error()))
		}
	}
	if n.IPAM != nil {
		if _, _, err := parseIPAM(n.IPAM); err != nil {
			errs = append(errs, field.Invalid(p.Child("ipam"), n.IPAM.Pools, err.Error()))
		}
	}
	if n.Routes != nil {
		for i, r := range n.Routes.Allowed {
			if pr, err := parsePrefix(r); err != nil || pr != pr.Masked() {
				errs = append(errs, field.Invalid(p.Child("routes", "allowed").Index(i), r, "must be a CIDR without host bits"))
			}
		}
	}
	return errs
}

// ProfileConflicts finds the clashes between profiles that no single
// profile shows, across all of them (not only those selecting one
// namespace): a network name offered with different definitions (another
// bridge, another pool, another MTU), and an address pool of one network
// overlapping a pool of another network in the same address space
// (NetworkSpace: IPClaims are keyed by address and address space, so the
// two never hand out one address twice, but they take addresses from each
// other, which an admin rarely means; pools of two bridges or links never
// meet, whatever their CIDRs), bridge networks whose spanning clashes
// (spanClashes), and VXLAN tunnel networks whose ports and VNIs include a
// spanning network's (tunnelSpanClashes). It returns, per
// profile name, errors rooted at that profile's spec; profiles without a
// clash are absent. The result does not depend on the order of profiles.
func ProfileConflicts(profiles []v1alpha1.NetworkProfile) map[string]field.ErrorList {
	sorted := make([]*v1alpha1.NetworkProfile, len(profiles))
	for i := range profiles {
		sorted[i] = &profiles[i]
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	out := map[string]field.ErrorList{}
	type use struct {
		profile string
		path    *field.Path
		network *v1alpha1.Network
	}
	type poolUse struct {
		use
		pool  netip.Prefix
		space string
	}
	byName := map[string]use{}
	var pools []poolUse
	for _, p := range sorted {
		for i := range p.Spec.Networks {
			n := &p.Spec.Networks[i]
			np := field.NewPath("spec", "networks").Index(i)
			if first, ok := byName[n.Name]; ok && !sameNetwork(first.network, n) {
				out[p.Name] = append(out[p.Name], field.Invalid(np, n.Name, fmt.Sprintf("network %q is offered differently by profile %q; an admin must make them identical or rename one", n.Name, first.profile)))
				out[first.profile] = append(out[first.profile], field.Invalid(first.path, n.Name, fmt.Sprintf("network %q is offered differently by profile %q; an admin must make them identical or rename one", n.Name, p.Name)))
				continue
			} else if !ok {
				byName[n.Name] = use{p.Name, np, n}
			}
			if n.IPAM == nil {
				continue
			}
			for j, s := range n.IPAM.Pools {
				pr, err := parsePrefix(s)
				if err != nil {
					continue // ValidateNetworkProfile reports it
				}
				here := poolUse{use{p.Name, np.Child("ipam", "pools").Index(j), n}, pr.Masked(), NetworkSpace(n)}
				for _, q := range pools {
					if q.network.Name != n.Name && q.space == here.space && q.pool.Overlaps(here.pool) {
						out[p.Name] = append(out[p.Name], field.Invalid(here.path, s, fmt.Sprintf("overlaps pool %s of network %q in profile %q", q.pool, q.network.Name, q.profile)))
						out[q.profile] = append(out[q.profile], field.Invalid(q.path, q.pool.String(), fmt.Sprintf("overlaps pool %s of network %q in profile %q", s, n.Name, p.Name)))
					}
				}
				pools = append(pools, here)
			}
		}
	}
	for key, clashes := range spanClashes(sorted) {
		out[key[0]] = append(out[key[0]], clashes...)
	}
	for key, clashes := range tunnelSpanClashes(sorted) {
		out[key[0]] = append(out[key[0]], clashes...)
	}
	for name := range out {
		sort.SliceStable(out[name], func(i, j int) bool { return out[name][i].Field < out[name][j].Field })
	}
	return out
}
