// Package approval turns a v1alpha1.Approval into the bytes the webhook
// signs and the agent verifies: canonical JSON, an Ed25519 signature in
// base64, and the check that an approval belongs to the pod it sits on.
//
// It must not decide anything (pkg/policy does) and must not load keys from
// disk (certs does): it works through the Signer and Verifier interfaces so
// that the agent's side never needs, or can reach, a private key.
package approval
