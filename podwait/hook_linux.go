package podwait

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"podnet.io/podnet/api/wait"
)

// RunHook is the wait as an OCI createRuntime hook, which the agent's NRI
// plugin adds to a podnet pod's container whose networks are still being
// attached: the runtime runs it in the node's namespaces once the
// container's own exist, with the container's state on stdin. It enters
// the container's network namespace (the pod's), waits there as the init
// container does (the same rule, Wait), and returns ExitReady so the
// runtime goes on creating the container, or ExitNotReady naming what is
// missing at --timeout, which fails the container and the kubelet tries
// it again later: closed, never started without its networks.
func RunHook(prog string, args []string, stdin io.Reader, stderr io.Writer) int {
	fs := flag.NewFlagSet(prog+" "+wait.HookCommand, flag.ContinueOnError)
	names, timeout, ok := parseWait(fs, args, stderr)
	if !ok {
		return ExitBadFlags
	}
	pid, err := statePID(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "%s %s: %v\n", prog, wait.HookCommand, err)
		return ExitBadFlags
	}
	// The namespace is the thread's: the wait's link dumps run on this
	// one, locked, and the thread is never given back.
	runtime.LockOSThread()
	if err := enterNetNS(pid); err != nil {
		fmt.Fprintf(stderr, "%s %s: %v\n", prog, wait.HookCommand, err)
		return ExitNotReady
	}
	if err := Wait(context.Background(), names, timeout, pollInterval); err != nil {
		fmt.Fprintf(stderr, "%s %s: container of pid %d: %v\n", prog, wait.HookCommand, pid, err)
		return ExitNotReady
	}
	return ExitReady
}

// statePID reads the container's process id from the OCI state a hook
// gets on stdin: the value of its "pid" member, the one member whose
// value is a number (annotations' are strings). Read by hand, not with
// encoding/json, which would grow the binary every podnet pod runs by a
// fifth.
func statePID(r io.Reader) (int, error) {
	b, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("read the container's state on stdin: %w", err)
	}
	for rest := b; ; {
		i := bytes.Index(rest, []byte(`"pid"`))
		if i < 0 {
			return 0, fmt.Errorf("the container's state on stdin names no process (no numeric \"pid\" in %.200q)", b)
		}
		rest = rest[i+len(`"pid"`):]
		v := bytes.TrimLeft(rest, " \t\r\n")
		if len(v) == 0 || v[0] != ':' {
			continue
		}
		v = bytes.TrimLeft(v[1:], " \t\r\n")
		n := 0
		for n < len(v) && v[n] >= '0' && v[n] <= '9' {
			n++
		}
		if n == 0 {
			continue
		}
		pid, err := strconv.Atoi(string(v[:n]))
		if err != nil || pid <= 0 {
			return 0, fmt.Errorf("the container's state on stdin: pid %q", v[:n])
		}
		return pid, nil
	}
}

// enterNetNS moves the calling thread into the network namespace of
// process pid.
func enterNetNS(pid int) error {
	path := "/proc/" + strconv.Itoa(pid) + "/ns/net"
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("the container's netns: %w", err)
	}
	defer f.Close()
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("enter the container's netns %s: %w", path, err)
	}
	return nil
}
