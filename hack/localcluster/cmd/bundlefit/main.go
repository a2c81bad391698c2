// Command bundlefit runs runc after fitting a new container's bundle to
// what the machines the local cluster runs on allow (package bundlefit):
// CRI-O, unlike containerd, has no setting for either, so a CRI-O node
// runs runc through this (CRIOConfig's runtime_path). Every other call
// passes through unchanged.
package main

import (
	"fmt"
	"os"
	"syscall"

	"podnet.io/podnet/hack/localcluster/bundlefit"
)

// runc is Debian's runc, which bundlefit runs.
const runc = "/usr/sbin/runc"

func main() {
	if err := bundlefit.Bundle(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bundlefit:", err)
		os.Exit(1)
	}
	err := syscall.Exec(runc, append([]string{runc}, os.Args[1:]...), os.Environ())
	fmt.Fprintln(os.Stderr, "bundlefit: exec", runc+":", err)
	os.Exit(1)
}
