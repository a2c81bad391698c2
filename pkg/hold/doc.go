// Package hold holds the decisions about how a podnet pod is kept from
// running its app before its networks exist (the modes, named by
// v1alpha1.HoldMode): which settings an admin may give, what HoldAuto
// chooses for a cluster and for a new pod, and whether a pod's
// annotations say NRI holds it. The webhook, the agent and the controller
// call these, so that they agree; the API package keeps only the names.
package hold
