//go:build tools

// Package crio pins CRI-O as a tools module of its own, so podnet's go.mod
// never carries CRI-O's dependencies. hack/crio/build.sh builds crio from
// it, and pinns from the C sources of the same module version.
package crio

import _ "github.com/cri-o/cri-o/cmd/crio"
