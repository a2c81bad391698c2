package policy

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// GrantInput is what the agent knows when it checks that a verified
// approval is still granted: the webhook judged the request in full when
// it signed; the agent only asks whether the admin has since taken the
// grant away.
type GrantInput struct {
	// Namespace of the pod, labels only; nil when it is gone.
	Namespace *corev1.Namespace
	// Profiles are all NetworkProfiles.
	Profiles []v1alpha1.NetworkProfile
	// Approval is the pod's verified approval.
	Approval *v1alpha1.Approval
	// Addresses the pod holds, by interface name; each must still lie in a
	// pool of its network.
	Addresses map[string][]netip.Addr
}

// Revocation is one approved interface whose grant no longer stands as
// approved: the admin narrowed or took back its network.
type Revocation struct {
	Interface string
	Network   string
	// Reason says what the admin changed, for Events and the condition:
	// each change with the field, the approved value and the new limit.
	Reason string
	// Narrowed, when not nil, is the interface as the admin still allows
	// it, changed in place (lower MTU, fewer routes, no default route);
	// nil means the interface is detached.
	Narrowed *v1alpha1.ApprovedInterface
}

// Detached reports whether the interface goes rather than changes.
func (r Revocation) Detached() bool { return r.Narrowed == nil }

// Revoked judges the approval again against the namespace's labels and the
// profiles as they are now, with the resolution the webhook decides by
// (narrow.go), and returns the interfaces the admin no longer grants as
// approved, in approval order, and why; none when the whole grant still
// stands. It is the one place that answers "does this grant still stand";
// the agent builds Narrow(approval, Revoked(...)).
func Revoked(in GrantInput) []Revocation {
	a := in.Approval
	if a == nil {
		return nil
	}
	whole := ""
	switch {
	case in.Namespace == nil:
		whole = fmt.Sprintf("namespace %q is gone", a.Namespace)
	case in.Namespace.Name != a.Namespace:
		whole = fmt.Sprintf("the approval was issued for namespace %q, not %q", a.Namespace, in.Namespace.Name)
	case in.Namespace.Labels[v1alpha1.EnabledLabel] != "true":
		whole = fmt.Sprintf("namespace %q is no longer opted in (label %s=true)", a.Namespace, v1alpha1.EnabledLabel)
	}
	var out []Revocation
	var j *rejudge
	for i, ai := range a.Interfaces {
		if whole != "" {
			out = append(out, Revocation{Interface: ai.Interface, Network: ai.Network, Reason: whole})
			continue
		}
		if j == nil {
			j = newRejudge(in)
		}
		if r := j.interfaceNarrowed(i, ai); r != nil {
			out = append(out, *r)
		}
	}
	return out
}

// addressesRevoked checks the held addresses against the network's pools
// now: an admin who shrinks a pool takes back the addresses outside it.
func addressesRevoked(profile string, n *v1alpha1.Network, held []netip.Addr) string {
	if len(held) == 0 {
		return ""
	}
	if n.IPAM == nil {
		return fmt.Sprintf("network %q of profile %q no longer assigns addresses", n.Name, profile)
	}
	pools, _, err := parseIPAM(n.IPAM)
	if err != nil {
		return fmt.Sprintf("network %q of profile %q %v", n.Name, profile, err)
	}
	for _, a := range held {
		if poolOf(pools, a.Unmap()) == nil {
			return fmt.Sprintf("address %s is outside the pools of network %q in profile %q (%v)", a, n.Name, profile, prefixStrings(pools))
		}
	}
	return ""
}
