// Package approval turns a v1alpha1.Approval into the bytes the webhook
// signs and the agent verifies: canonical JSON, an Ed25519 signature in
// base64 by a key the approval names (KeyID), and the check that an
// approval belongs to the pod it sits on — its namespace, service account
// and request text, and either its UID or a creation time right after the
// approval's issue time (IssueWindow, MaxClockSkew).
//
// A ResourceClaim's approval (ResourceClaim set) is bound the same way a
// new pod's is, since a claim's spec never changes after CREATE and its
// name and UID may not exist yet then: to its namespace, the hash of its
// podnet request text (ClaimRequestText: the podnet requests and configs of
// spec.devices, canonical JSON) and its creationTimestamp right after
// IssuedAt; to no service account, since a claim runs as no one.
// VerifyClaim is the agent's check of a claim; a claim's approval never
// passes for a pod's, nor a pod's for a claim's.
//
// It must not decide anything (pkg/policy does) and must not load keys from
// disk (certs does): it works through the Signer and Verifier interfaces so
// that the agent's side never needs, or can reach, a private key.
package approval
