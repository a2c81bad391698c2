// Command pause is the process that holds a pod sandbox's namespaces open.
// It sleeps until SIGINT or SIGTERM and, as PID 1 of a pod that shares its
// process namespace, reaps orphaned children so they do not pile up as
// zombies. It is statically linked and needs no privilege.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s == syscall.SIGCHLD {
			reapChildren()
			continue
		}
		// A clean exit tells the runtime the sandbox stopped on request.
		os.Exit(0)
	}
}

// reapChildren collects every exited child; one SIGCHLD may stand for many
// exits, so it loops until none is left.
func reapChildren() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
