// Package policy decides whether a pod may have the extra networks it asks
// for. It parses the podnet.io/networks annotation, finds the NetworkProfiles
// that apply to the pod, checks every requested value against the profile
// limits and resolves defaults into a v1alpha1.Approval, or explains in
// field-path errors why not and what the namespace may ask for instead.
// Revoked answers the agent's narrower question: does the grant behind a
// signed approval still stand, judged by the same resolution, and if not,
// what is narrowed in place and what is detached (Narrow applies the
// answer to the approval). DecideClaim judges a ResourceClaim's podnet
// requests (ParseClaim) by Decide, as the annotation they stand for.
//
// It is pure: every input is passed in, the same inputs give a byte-identical
// approval, and it must never call the API server, read files or the clock,
// sign anything or touch the network. The webhook gathers the inputs and
// signs the result (pkg/approval); the agent only executes approvals.
package policy
