package policy

import (
	"fmt"
	"math"
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam/rules"
)

// namespaceNameLabel is the label the API server sets on every namespace
// to its own name; a tenant cannot change it, so a selector on it names
// namespaces for sure.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// NetworkSpace is the address space of a profile network
// (rules.SpaceName of the interface it approves), "" for a network
// whose kind is broken.
func NetworkSpace(n *v1alpha1.Network) string {
	k, err := kindOf(n)
	if err != nil {
		return ""
	}
	// A tunnel network's space is named after the network, as in the
	// approvals the webhook makes.
	a := v1alpha1.ApprovedInterface{Network: n.Name}
	k.approve(n, &a)
	return rules.SpaceName(a)
}

// ClaimInSpace says whether an IPClaim (its network name and the address
// space it records) holds an address of a profile network's space: a
// claim counts in the space it records, whatever network name it was made
// for, so that two network names on one bridge each show the addresses of
// both; a claim made before spaces were recorded counts for its own
// network name. Profile status and `kubectl podnet pools` count with it.
func ClaimInSpace(claimNetwork, claimSpace, network, space string) bool {
	if claimSpace != "" {
		return claimSpace == space
	}
	return claimNetwork == network
}

// capOf reads a network's own cap: ipam.maxAddressesPerNamespace, or
// unlimited when the admin said unlimitedAddressesPerNamespace, or
// set=false when neither is there.
func capOf(ipam *v1alpha1.IPAM) (limit int32, unlimited, set bool, err error) {
	m := ipam.MaxAddressesPerNamespace
	switch {
	case m != nil && ipam.UnlimitedAddressesPerNamespace:
		return 0, false, false, fmt.Errorf("has both ipam.maxAddressesPerNamespace and ipam.unlimitedAddressesPerNamespace")
	case ipam.UnlimitedAddressesPerNamespace:
		return 0, true, true, nil
	case m == nil:
		return 0, false, false, nil
	case *m < 1 || *m > MaxAddressesPerNamespace:
		return 0, false, false, fmt.Errorf("has ipam.maxAddressesPerNamespace %d outside 1-%d", *m, MaxAddressesPerNamespace)
	}
	return *m, false, true, nil
}

// DefaultQuota is the cap of a network whose ipam.maxAddressesPerNamespace
// is absent on an address space more than one namespace may draw from:
// half of the usable addresses of its smallest pool (gateways and
// reserved addresses left out), at least 1 and at most
// MaxAddressesPerNamespace. Half lets two tenants of one pool always both
// get addresses; an admin who shares a pool more widely sets a number.
func DefaultQuota(ipam *v1alpha1.IPAM) int32 {
	least := uint64(math.MaxUint64)
	for _, s := range ipam.Pools {
		pool, err := netip.ParsePrefix(s)
		if err != nil {
			continue
		}
		least = min(least, usableIn(pool.Masked(), ipam.Gateways))
	}
	return int32(max(1, min(least/2, MaxAddressesPerNamespace)))
}

// usableIn counts the addresses of pool a pod may get (saturating at
// 2^62 for large pools).
func usableIn(pool netip.Prefix, gateways []string) uint64 {
	host := pool.Addr().BitLen() - pool.Bits()
	if host >= 62 {
		return 1 << 62
	}
	n := uint64(1) << host
	if rules.ReservedInPool(pool, pool.Addr()) != "" {
		n--
	}
	if rules.ReservedInPool(pool, rules.LastInPool(pool)) != "" {
		n--
	}
	for _, g := range gateways {
		if a, err := netip.ParseAddr(g); err == nil && pool.Contains(a) && n > 0 {
			n--
		}
	}
	return n
}

// pinnedNamespace is the one namespace a selector can ever select, when it
// names one by its kubernetes.io/metadata.name label (matchLabels, or an
// In expression with a single value).
func pinnedNamespace(sel *metav1.LabelSelector) (string, bool) {
	if name, ok := sel.MatchLabels[namespaceNameLabel]; ok {
		return name, true
	}
	for _, r := range sel.MatchExpressions {
		if r.Key == namespaceNameLabel && r.Operator == metav1.LabelSelectorOpIn && len(r.Values) == 1 {
			return r.Values[0], true
		}
	}
	return "", false
}

// spaceUse is what the profiles say of one address space.
type spaceUse struct {
	// strictest is the lowest explicit cap (0: none).
	strictest int32
	// defaults is the lowest default cap of a network with none set (0:
	// none).
	defaults int32
	// namespace is the one namespace every offering profile pins, "" once
	// two differ or one pins none.
	namespace string
	shared    bool
}

// SpaceQuotas is the quota per namespace of every address space the
// profiles offer addresses in: the strictest cap among the networks of
// every profile in that space, whichever profile a pod comes through. A
// network without ipam.maxAddressesPerNamespace contributes DefaultQuota
// when more than one namespace can draw from the space (a profile
// offering it does not pin a single namespace, or two pin different
// ones); "Unlimited" contributes nothing. A space absent from the result
// has no cap. Profiles that are invalid on their own are left out, as
// admission leaves them out.
func SpaceQuotas(profiles []v1alpha1.NetworkProfile) map[string]int32 {
	return NewProfileSet(profiles).quotas
}

// spaceQuotas is SpaceQuotas of profiles, of which those with errors in
// broken (by index) are left out.
func spaceQuotas(profiles []*v1alpha1.NetworkProfile, broken []field.ErrorList) map[string]int32 {
	uses := map[string]*spaceUse{}
	for i, p := range profiles {
		if len(broken[i]) > 0 {
			continue
		}
		ns, pinned := pinnedNamespace(&p.Spec.NamespaceSelector)
		for j := range p.Spec.Networks {
			n := &p.Spec.Networks[j]
			if n.IPAM == nil {
				continue
			}
			space := NetworkSpace(n)
			u, seen := uses[space]
			if !seen {
				u = &spaceUse{namespace: ns, shared: !pinned}
				uses[space] = u
			}
			u.shared = u.shared || !pinned || ns != u.namespace
			limit, unlimited, set, err := capOf(n.IPAM)
			switch {
			case err != nil || unlimited:
			case set:
				u.strictest = lowest(u.strictest, limit)
			default:
				u.defaults = lowest(u.defaults, DefaultQuota(n.IPAM))
			}
		}
	}
	out := map[string]int32{}
	for space, u := range uses {
		q := u.strictest
		if u.shared {
			q = lowest(q, u.defaults)
		}
		if q > 0 {
			out[space] = q
		}
	}
	return out
}

// lowest is the lower of two caps, 0 meaning none.
func lowest(a, b int32) int32 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// withQuota signs an interface's address space and that space's quota
// into its IPAM: the agent keys claims and quota slots by them.
func (s scope) withQuota(a *v1alpha1.ApprovedInterface) {
	if a.IPAM == nil {
		return
	}
	a.IPAM.AddressSpace = rules.SpaceName(*a)
	a.IPAM.MaxPerNamespace = s.quotas[a.IPAM.AddressSpace]
}
