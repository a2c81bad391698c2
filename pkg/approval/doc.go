// Package approval turns a v1alpha1.Approval into the bytes the webhook
// signs and the agent verifies: canonical JSON, an Ed25519 signature in
// base64 by a key the approval names (KeyID), and the check that an
// approval belongs to the pod it sits on — its namespace, service account
// and request text, and either its UID or a creation time right after the
// approval's issue time (IssueWindow, MaxClockSkew).
//
// It must not decide anything (pkg/policy does) and must not load keys from
// disk (certs does): it works through the Signer and Verifier interfaces so
// that the agent's side never needs, or can reach, a private key.
package approval
