// Package webhook is podnet's mutating admission webhook for pods. On every
// CREATE and UPDATE of a pod that asks for networks it gathers the inputs
// (the pod, its namespace and the NetworkProfiles, all from an informer
// cache), lets pkg/policy decide, signs the decision with pkg/approval and
// answers with a JSON patch: the approval annotations (stamped with the
// time and, on UPDATE, bound to the pod's UID; none for a dry run), and on
// CREATE the podnet.io/networks-ready readiness gate and the unprivileged
// wait init container. It refuses an UPDATE that edits podnet's own
// annotations, and a CREATE carrying an approval without a request; it
// removes network-status annotations (podnet's and Multus') from new pods.
// It signs only for a pod whose spec, as admitted, keeps to what the
// approval assumes (pkg/policy.ValidatePodPrivilege, which the agent
// checks too): on an UPDATE, where containers cannot change, that means a
// runtime attach is refused while a container keeps NET_RAW for a network
// without raw sockets.
//
// At ClaimPath it admits ResourceClaim CREATEs the same way: the claim's
// podnet requests are judged by pkg/policy (DecideClaim, which calls
// Decide) and the approval, bound to the claim by pkg/approval
// (BindClaim), is signed onto it; a new claim carrying an approval is
// refused.
//
// It must not hold policy rules of its own (they live in pkg/policy), read
// from the API server per request, write anything anywhere while admitting
// (admission is dry-run safe because it has no side effects), or touch the
// pod spec on UPDATE, where the API server forbids it.
package webhook
