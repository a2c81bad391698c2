// Package netpolicy is the one rule of what MultiNetworkPolicy allows on
// a podnet network, under the admin's floor: which pods a policy
// isolates, and which peers (as address prefixes) and ports it lets in
// and out. It has the semantics of Kubernetes NetworkPolicy: a pod that
// any policy selects for a direction is isolated in that direction, and
// the allows of every such policy add up. A floor from the network's
// profile isolates every pod on the network first, and a tenant's policy
// can only narrow it.
//
// It is pure: the caller gives it the policies written for one network,
// the pods on that network with their addresses there, and the
// namespaces' labels, and gets one Verdict per pod, with a Problem for
// each part of a policy podnet cannot honour (never silently dropped:
// such a part allows nothing).
package netpolicy
