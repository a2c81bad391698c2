package kubectlpodnet

import (
	"fmt"
	"net/netip"
	"sort"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/pkg/policy"
)

// PoolUsage is one address pool of one network of one profile.
type PoolUsage struct {
	Profile string `json:"profile"`
	Network string `json:"network"`
	Pool    string `json:"pool"`
	// Size is how many addresses allocation may hand out (no network or
	// broadcast address; capped at 2^63).
	Size  uint64 `json:"size"`
	InUse uint64 `json:"inUse"`
	Free  uint64 `json:"free"`
	// MaxPerNamespace is the quota per namespace of the network's address
	// space (policy.SpaceQuotas: the strictest
	// ipam.maxAddressesPerNamespace there, or its default; 0: no cap).
	MaxPerNamespace int32 `json:"maxPerNamespace,omitempty"`
	// Namespaces counts the addresses in use per namespace of the pods
	// holding them.
	Namespaces map[string]uint64 `json:"namespaces,omitempty"`
	// Error, when set, says why the pool could not be read.
	Error string `json:"error,omitempty"`
	// hostBits is the pool's host part, for writing huge counts.
	hostBits int
}

// fullness is InUse/Size, for sorting.
func (u PoolUsage) fullness() float64 {
	if u.Size == 0 {
		return 1
	}
	return float64(u.InUse) / float64(u.Size)
}

// poolUsage counts, for every pool of every network of every profile, the
// IPClaims of that network's address space (policy.ClaimInSpace) whose
// address falls in the pool; fullest first. Two network names on one
// bridge or master link share their claims, since addresses are unique
// per address space.
func poolUsage(profiles []v1alpha1.NetworkProfile, claims []v1alpha1.IPClaim) []PoolUsage {
	quotas := policy.SpaceQuotas(profiles)
	var out []PoolUsage
	for _, p := range profiles {
		for _, n := range p.Spec.Networks {
			if n.IPAM == nil {
				continue
			}
			space := policy.NetworkSpace(&n)
			var held []heldAddr
			for _, c := range claims {
				network := c.Labels[v1alpha1.NetworkLabel]
				if network == "" {
					network = c.Spec.Network
				}
				a, err := netip.ParseAddr(c.Spec.Address)
				if err == nil && policy.ClaimInSpace(network, c.Spec.AddressSpace, n.Name, space) {
					held = append(held, heldAddr{a, c.Spec.Pod.Namespace})
				}
			}
			for _, pool := range n.IPAM.Pools {
				u := countPool(p.Name, n.Name, pool, held)
				u.MaxPerNamespace = quotas[space]
				out = append(out, u)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if fi, fj := out[i].fullness(), out[j].fullness(); fi != fj {
			return fi > fj
		}
		if out[i].Profile != out[j].Profile {
			return out[i].Profile < out[j].Profile
		}
		if out[i].Network != out[j].Network {
			return out[i].Network < out[j].Network
		}
		return out[i].Pool < out[j].Pool
	})
	return out
}

// heldAddr is a claimed address and the namespace of the pod holding it.
type heldAddr struct {
	addr      netip.Addr
	namespace string
}

func countPool(profile, network, pool string, addrs []heldAddr) PoolUsage {
	u := PoolUsage{Profile: profile, Network: network, Pool: pool}
	prefix, err := netip.ParsePrefix(pool)
	if err != nil {
		u.Error = fmt.Sprintf("pool %q: %v", pool, err)
		return u
	}
	prefix = prefix.Masked()
	u.hostBits = prefix.Addr().BitLen() - prefix.Bits()
	u.Size = ipam.PoolSize(prefix)
	for _, a := range addrs {
		if prefix.Contains(a.addr) {
			u.InUse++
			if u.Namespaces == nil {
				u.Namespaces = map[string]uint64{}
			}
			u.Namespaces[a.namespace]++
		}
	}
	if u.InUse < u.Size {
		u.Free = u.Size - u.InUse
	}
	return u
}

// topNamespace is the namespace holding the most addresses of the pool
// (the first by name among equals) with its count, and the cap when the
// network has one: "t1 12/16"; "-" when none is in use.
func topNamespace(u PoolUsage) string {
	top, n := "", uint64(0)
	for ns, c := range u.Namespaces {
		if c > n || (c == n && ns < top) {
			top, n = ns, c
		}
	}
	switch {
	case top == "":
		return "-"
	case u.MaxPerNamespace > 0:
		return fmt.Sprintf("%s %d/%d", top, n, u.MaxPerNamespace)
	}
	return fmt.Sprintf("%s %d", top, n)
}
