// Package netpolicies is podnet-controller's network policy room: it turns
// the MultiNetworkPolicies (k8s.cni.cncf.io/v1beta1), the profiles'
// policy floors and the pods on each podnet network into one NodePolicy
// per node, named after the node, that the node's agent reads
// (netpolicy.ReadNodeSpec) and enforces in its pods' network namespaces.
//
// It decides nothing itself: pkg/netpolicy's Evaluate is the rule, and
// NodeSpec writes a node's object. What it adds is the bookkeeping that
// keeps the work to what changed: an index of the pods of each network,
// kept from the pod cache's change handler on every replica (so that a
// new leader starts warm); the networks and nodes a change makes dirty; the
// verdicts of each network, kept between passes; and one work key whose
// passes gather the changes of a short batch, so that a burst of pods
// costs each node a few writes, not one a pod. It writes an object only
// when its spec differs from the API's, and reports each part of a policy
// podnet cannot honour as a Warning Event on the policy, once per
// generation and message.
//
// What it must not do: touch a node (the agent does), read pods from the
// API (the pod cache holds what it needs), or decide what a policy means
// (pkg/netpolicy does).
package netpolicies
