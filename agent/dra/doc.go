// Package dra is the agent's Dynamic Resource Allocation driver, driver
// v1alpha1.DRADriver: a kubelet plugin (k8s.io/dynamic-resource-allocation
// kubeletplugin) that publishes, in ResourceSlices of a pool named after
// the node, one device per attachment of every profile network that opts
// in (spec.networks[].dra) and that this node carries, and answers the
// kubelet's NodePrepareResources and NodeUnprepareResources for claims
// allocated from them.
//
// What a node publishes is decided by pure functions (NodeDevices,
// NodeResources) from the profiles and one seam, Carries: whether this
// node can carry a network. Until a capability check is wired in, every
// DRA-enabled network is carried (CarryAll).
//
// Preparing a claim checks that every podnet device it was allocated is
// one of this node's and remembers the pods it is reserved for; the work
// of a prepared claim goes through ClaimPreparer: the agent's is
// ClaimNetworks (its Preparer), which verifies the claim's signed approval
// and wakes the pod's reconcile, which builds the claim's interfaces with
// the pod's own. The reconcile sees ClaimNetworks through its own small
// interface (agent.ResourceClaims): the approval a pod's attach executes
// (Approve, the one rule of the reconcile and the sandbox-setup paths),
// and the claims' status it writes back (WriteStatus).
//
// The package never writes a slice of another node: the kubeletplugin
// helper publishes only slices whose spec.nodeName is this node, and the
// admission policy podnet-agent-resourceslices
// (deploy/policies/agent-resourceslices.yaml) refuses any other.
package dra
