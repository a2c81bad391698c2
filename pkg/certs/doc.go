// Package certs loads the approval signing keys from files and keeps them
// current: the webhook's Ed25519 private key (PEM PKCS#8) and the agent's
// public key(s) (PEM PKIX). A key file is re-read when it changes, including
// the symlink swap by which Kubernetes updates secret volumes, so keys rotate
// without restarts. It also generates development key pairs.
//
// It must not decide or sign policy (pkg/policy and pkg/approval do), and
// the agent's side must never be able to load a private key. The webhook's
// serving certificate is reloaded by controller-runtime's certwatcher, not
// here.
package certs
