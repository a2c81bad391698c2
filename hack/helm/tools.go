//go:build tools

// Package tools pins the helm command that hack/helm/build.sh builds.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
