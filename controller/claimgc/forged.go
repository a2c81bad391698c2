package claimgc

import (
	"fmt"

	"podnet.io/podnet/controller/infocache"
)

// ReasonForgedClaim is the reason of the Event on a claim deleted because
// its pod lives but did not make it.
const ReasonForgedClaim = "ForgedClaimDeleted"

// forgery says why a claim that names the live pod p cannot have been made
// for p by p's own agent, or returns "" when it may have been.
//
// Admission (ValidatingAdmissionPolicy podnet-agent-node-claims) lets an
// agent create only claims labelled with its own node, but a policy cannot
// read the pod a claim names. A compromised node could therefore create
// claims, under its own node's label, that name live pods of other nodes or
// namespaces: addresses and quota slots that no pod uses, which the pod-gone
// rule alone would never collect because their pod lives. Every claim an
// agent makes for a pod carries that pod's node and namespace, is named
// after what it holds, and is for an interface the pod's approval names;
// a claim breaking one of these is collected like the claim of a gone pod.
//
// What this cannot tell apart: claims a compromised node makes for the
// pods of its own node, which it controls anyway.
func forgery(c *infocache.ClaimInfo, p *infocache.PodInfo) string {
	if c.HasNode && c.Node != p.Node {
		return fmt.Sprintf("it is labelled for node %q but its pod runs on node %q", c.Node, p.Node)
	}
	if c.HasNamespace && c.Namespace != p.Namespace {
		return fmt.Sprintf("it is labelled for namespace %q but its pod is in namespace %q", c.Namespace, p.Namespace)
	}
	if c.Misnamed {
		return infocache.Misnamed(c)
	}
	return unapproved(c, p)
}

// unapproved says why p's approval does not cover c's network and
// interface. The approval's signature is not checked here: forgery has
// already checked that the claim is labelled with the pod's own node, and
// that node's agent may write the pod's annotations anyway. An approval this
// version cannot read counts as covering the claim, so that a newer
// webhook's approval never costs a pod its addresses.
func unapproved(c *infocache.ClaimInfo, p *infocache.PodInfo) string {
	switch p.Approval {
	case infocache.NoApproval:
		return "its pod has no podnet approval"
	case infocache.UnreadableApproval:
		return ""
	}
	for _, i := range p.Interfaces {
		if i.Network == c.Spec.Network && i.Interface == c.Spec.Interface {
			return ""
		}
	}
	return fmt.Sprintf("its pod's approval has no interface %q on network %q", c.Spec.Interface, c.Spec.Network)
}
