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

// Revocation is one approved interface whose grant no longer stands.
type Revocation struct {
	Interface string
	Network   string
	// Reason says what the admin changed, for Events and the condition.
	Reason string
}

// Revoked returns the approval's interfaces that the namespace's labels and
// the profiles no longer grant, in approval order, and why; none when the
// whole grant still stands. It is the one place that answers "does this
// grant still stand"; the agent detaches what it returns.
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
	for _, ai := range a.Interfaces {
		reason := whole
		if reason == "" {
			reason = interfaceRevoked(in, ai)
		}
		if reason != "" {
			out = append(out, Revocation{Interface: ai.Interface, Network: ai.Network, Reason: reason})
		}
	}
	return out
}

// interfaceRevoked says why one interface is no longer granted, or "".
func interfaceRevoked(in GrantInput, ai v1alpha1.ApprovedInterface) string {
	var p *v1alpha1.NetworkProfile
	for i := range in.Profiles {
		if in.Profiles[i].Name == ai.Profile {
			p = &in.Profiles[i]
		}
	}
	if p == nil || p.DeletionTimestamp != nil {
		return fmt.Sprintf("profile %q is gone", ai.Profile)
	}
	matched, err := matchSelector(&p.Spec.NamespaceSelector, in.Namespace.Labels)
	switch {
	case err != nil:
		return fmt.Sprintf("profile %q has an invalid namespaceSelector: %v", p.Name, err)
	case !matched:
		return fmt.Sprintf("profile %q no longer selects namespace %q", p.Name, in.Namespace.Name)
	}
	var n *v1alpha1.Network
	for i := range p.Spec.Networks {
		if p.Spec.Networks[i].Name == ai.Network {
			n = &p.Spec.Networks[i]
		}
	}
	if n == nil {
		return fmt.Sprintf("profile %q no longer offers network %q", p.Name, ai.Network)
	}
	return addressesRevoked(p.Name, n, in.Addresses[ai.Interface])
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
