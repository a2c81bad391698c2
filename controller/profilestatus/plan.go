package profilestatus

import (
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/pkg/policy"
)

// The Ready condition of a NetworkProfile and its reasons.
const (
	ConditionReady = "Ready"
	// ReasonValid: the profile is valid and clashes with no other.
	ReasonValid = "Valid"
	// ReasonInvalid: the profile breaks a rule on its own.
	ReasonInvalid = "InvalidSpec"
	// ReasonConflict: the profile clashes with another profile.
	ReasonConflict = "Conflict"
)

// maxAvailable caps the free-address counts (an IPv6 /64 has 2^64).
const maxAvailable = int64(1) << 62

// planStatus is the status profile p should have: invalid are its own
// errors (policy.ValidateNetworkProfile), conflicts its clashes with other
// profiles (policy.ProfileConflicts), inUse says how many claims of a
// network hold addresses of a pool. now stamps a condition that changes;
// one that does not keeps its time, so an unchanged profile plans exactly
// the status it has and nothing is written.
func planStatus(p *v1alpha1.NetworkProfile, invalid, conflicts field.ErrorList, inUse func(network string, pool netip.Prefix) int64, now metav1.Time) v1alpha1.NetworkProfileStatus {
	st := v1alpha1.NetworkProfileStatus{
		ObservedGeneration: p.Generation,
		Conditions:         append([]metav1.Condition(nil), p.Status.Conditions...),
		Spanning:           policy.DescribeSpanning(p),
	}
	cond := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonValid,
		Message: "the profile is valid and clashes with no other profile", ObservedGeneration: p.Generation, LastTransitionTime: now}
	switch {
	case len(invalid) > 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonInvalid, errorsText(invalid)
	case len(conflicts) > 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonConflict, errorsText(conflicts)
	}
	meta.SetStatusCondition(&st.Conditions, cond)

	for _, n := range p.Spec.Networks {
		if n.IPAM == nil || len(n.IPAM.Pools) == 0 {
			continue
		}
		u := v1alpha1.NetworkUsage{Name: n.Name}
		for _, text := range n.IPAM.Pools {
			pool, err := netip.ParsePrefix(text)
			if err != nil {
				continue // reported in the condition
			}
			pool = pool.Masked()
			used := inUse(n.Name, pool)
			free := max(usable(pool, n.IPAM.Gateways)-used, 0)
			u.Pools = append(u.Pools, v1alpha1.PoolUsage{Pool: text, InUse: used, Available: free})
			st.AddressesInUse += used
			if st.LeastAvailable == nil || free < *st.LeastAvailable {
				st.LeastAvailable = &free
			}
		}
		st.Networks = append(st.Networks, u)
	}
	return st
}

// usable is how many addresses of pool can be handed out: its usable hosts
// less the gateways inside it, capped at maxAvailable.
func usable(pool netip.Prefix, gateways []string) int64 {
	size := ipam.PoolSize(pool)
	for _, g := range gateways {
		if a, err := netip.ParseAddr(strings.Split(g, "/")[0]); err == nil && pool.Contains(a) && size > 0 {
			size--
		}
	}
	if size > uint64(maxAvailable) {
		return maxAvailable
	}
	return int64(size)
}

// errorsText joins field errors into one condition message.
func errorsText(errs field.ErrorList) string {
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = e.Error()
	}
	msg := strings.Join(parts, "; ")
	if len(msg) > 32000 { // a condition message holds at most 32768 bytes
		msg = msg[:32000] + fmt.Sprintf("… (%d errors)", len(errs))
	}
	return msg
}
