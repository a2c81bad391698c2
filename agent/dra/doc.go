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
// of a prepared claim goes through ClaimPreparer: the agent's
// (agent.ClaimNetworks, wired in cmd/podnet-agent) verifies the claim's
// signed approval and has the reconciler attach its interfaces with the
// pod's own.
//
// The package never writes a slice of another node: the kubeletplugin
// helper publishes only slices whose spec.nodeName is this node, and the
// admission policy podnet-agent-resourceslices
// (deploy/policies/agent-resourceslices.yaml) refuses any other.
package dra
