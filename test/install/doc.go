// Package install tests that cert-manager, built from its Go module by
// hack/cert-manager, issues the webhook's serving certificate from
// deploy/'s resources and injects a CA that verifies it, against a real
// kube-apiserver. The installer itself lives in hack/install.
package install
