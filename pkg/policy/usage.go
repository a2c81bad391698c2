package policy

import (
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// podUsage finds clashes between a pod's interfaces that each look fine on
// their own: the same static address twice, two interfaces on the same
// link and VLAN (one port of the node's bridge for that VLAN), or more addresses
// of one pool than its per-namespace cap (the pod alone would exceed it).
type podUsage struct {
	static map[string]string
	vlans  map[string]string
	// spaces counts the addresses the pod's interfaces take per address
	// space and family.
	spaces map[spaceFamily]int
	// macs counts the MACs the pod's interfaces claim per network with a
	// macRange.
	macs map[string]int
}

// spaceFamily is one family of one address space: a quota counts there.
type spaceFamily struct {
	space string
	ipv4  bool
}

func newPodUsage() podUsage {
	return podUsage{static: map[string]string{}, vlans: map[string]string{}, spaces: map[spaceFamily]int{}, macs: map[string]int{}}
}

func (u podUsage) add(p *field.Path, a v1alpha1.ApprovedInterface) field.ErrorList {
	var errs field.ErrorList
	if a.Kind == v1alpha1.KindVLAN {
		key := fmt.Sprintf("%s.%d", a.Master, a.VLAN)
		if prev, dup := u.vlans[key]; dup {
			errs = append(errs, field.Invalid(p.Child("vlan"), a.VLAN, fmt.Sprintf("network %q: interface %s of this pod is already on this vlan of %s (one interface per link and vlan)", a.Network, prev, a.Master)))
		}
		u.vlans[key] = a.Interface
	}
	errs = append(errs, u.addMAC(p, a)...)
	if a.IPAM != nil {
		for i, s := range a.IPAM.Static {
			addr := strings.SplitN(s, "/", 2)[0]
			if prev, dup := u.static[addr]; dup {
				errs = append(errs, field.Invalid(p.Child("ips").Index(i), s, fmt.Sprintf("network %q: address already given to interface %s of this pod", a.Network, prev)))
			}
			u.static[addr] = a.Interface
		}
		errs = append(errs, u.addPools(p, a)...)
	}
	return errs
}

// addPools counts the addresses interface a takes from each pool (its
// static addresses there, or one allocated when it has no static address of
// the pool's family) and refuses the interface when the pod would hold more
// addresses of one family of an address space than its quota per
// namespace: that pod could never attach, whatever the rest of its
// namespace holds.
func (u podUsage) addPools(p *field.Path, a v1alpha1.ApprovedInterface) field.ErrorList {
	var errs field.ErrorList
	for _, text := range a.IPAM.Pools {
		pool, err := netip.ParsePrefix(text)
		if err != nil {
			continue // the profile's own validation reports it
		}
		pool = pool.Masked()
		n, family := 0, false
		for _, s := range a.IPAM.Static {
			if sp, err := netip.ParsePrefix(s); err == nil {
				family = family || sp.Addr().Is4() == pool.Addr().Is4()
				if pool.Contains(sp.Addr()) {
					n++
				}
			}
		}
		if !family {
			n = 1
		}
		key := spaceFamily{a.IPAM.AddressSpace, pool.Addr().Is4()}
		u.spaces[key] += n
		if max := a.IPAM.MaxPerNamespace; max > 0 && u.spaces[key] > int(max) {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("network %q: the pod would hold %d %s addresses of address space %s (pool %s), above its quota per namespace (ipam.maxAddressesPerNamespace %d, the strictest of the profiles on it, profile %q included)",
				a.Network, u.spaces[key], familyName(key.ipv4), a.IPAM.AddressSpace, text, max, a.Profile)))
		}
	}
	return errs
}
