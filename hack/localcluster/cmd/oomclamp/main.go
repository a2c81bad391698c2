// Command oomclamp runs runc with each new container's oom_score_adj
// raised to at least oomclamp's own, as containerd's
// restrict_oom_score_adj does: the machines the local cluster runs on do
// not permit lowering it, and the kubelet asks for -997 for node-critical
// and Guaranteed pods (CRI-O for -998 for its infra container), which runc
// then fails to set. CRI-O has no such setting, so a CRI-O node runs runc
// through this (CRIOConfig's runtime_path). Every other call passes
// through unchanged.
package main

import (
	"fmt"
	"os"
	"syscall"

	"podnet.io/podnet/hack/localcluster/oomclamp"
)

// runc is Debian's runc, which oomclamp runs.
const runc = "/usr/sbin/runc"

func main() {
	if err := oomclamp.Bundle(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "oomclamp:", err)
		os.Exit(1)
	}
	err := syscall.Exec(runc, append([]string{runc}, os.Args[1:]...), os.Environ())
	fmt.Fprintln(os.Stderr, "oomclamp: exec", runc+":", err)
	os.Exit(1)
}
