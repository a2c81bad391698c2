//go:build tools

// Package containerd2 pins containerd 2 (its daemon and its runc shim) as a
// tools module of its own, so podnet's go.mod never carries containerd's
// dependencies. hack/containerd2/build.sh builds the commands from it.
package containerd2

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
)
