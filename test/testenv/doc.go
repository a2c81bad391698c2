// Package testenv starts a real kube-apiserver and etcd (controller-runtime's
// envtest, with the binaries built by hack/build-k8s.sh and Debian's etcd),
// with podnet's CRDs installed, and optionally a real kube-controller-manager
// against it, for integration tests.
//
// It never downloads anything and never fakes the API server. A missing
// binary fails the test with the command that builds it; it is not a skip.
package testenv
