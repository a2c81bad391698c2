//go:build tools

// Package tools pins the kube-apiserver that hack/build-k8s.sh builds for
// the minimum-version test stage.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
