// Command podnet-wait is the init container the webhook injects into every
// pod it grants networks:
//
//	podnet-wait --interfaces net1,net2 --timeout 5m0s
//
// It exits 0 once every listed interface exists and is up in its own
// network namespace (the pod's), and none is still having its addresses
// checked on the wire by the agent (its alias ends in
// wait.CheckingAliasSuffix), 1 with a message naming the missing ones
// when the timeout passes, and 2 on bad flags. As an OCI createRuntime
// hook the agent's NRI plugin adds (`podnet-wait hook --interfaces …
// --timeout …`, the container's state on stdin), it waits the same way in
// the container's network namespace (podwait.RunHook). It runs without any
// privilege and talks to nothing but the kernel. It links only the
// standard library and podwait, so that its image and the memory it
// maps stay small in every pod; `podnet-agent wait` runs the same code.
package main

import (
	"os"

	"podnet.io/podnet/api/wait"
	"podnet.io/podnet/pkg/version"
	"podnet.io/podnet/podwait"
)

func main() {
	if version.Requested(os.Args[1:]) {
		os.Stdout.WriteString(version.String("podnet-wait") + "\n")
		return
	}
	if len(os.Args) > 1 && os.Args[1] == wait.HookCommand {
		os.Exit(podwait.RunHook("podnet-wait", os.Args[2:], os.Stdin, os.Stderr))
	}
	os.Exit(podwait.Run("podnet-wait", os.Args[1:], os.Stdout, os.Stderr))
}
