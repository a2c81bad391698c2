package podwait

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Exit codes of Run.
const (
	ExitReady    = 0
	ExitNotReady = 1
	ExitBadFlags = 2
)

// DefaultTimeout is --timeout when the flag is absent.
const DefaultTimeout = 5 * time.Minute

// pollInterval is how often the links are listed while waiting: one dump
// of the pod's few links costs microseconds, and the app starts at most
// this late after its last interface comes up.
const pollInterval = 50 * time.Millisecond

// terminationLog is the file the kubelet mounts for a container's
// termination message, which `kubectl describe pod` shows.
const terminationLog = "/dev/termination-log"

// Run is the whole wait command, shared by the podnet-wait binary and
// `podnet-agent wait`: it parses args (--interfaces, --timeout), waits, and
// returns ExitReady once every interface is up, ExitNotReady with a
// message naming what is missing, or ExitBadFlags with one naming the flag.
// prog names the command in its messages.
func Run(prog string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	fs.SetOutput(stderr)
	list := fs.String("interfaces", "", "comma-separated interface names to wait for, e.g. net1,net2")
	timeout := fs.Duration("timeout", DefaultTimeout, "how long to wait")
	if err := fs.Parse(args); err != nil {
		return ExitBadFlags
	}
	names, err := ParseInterfaces(*list)
	switch {
	case err != nil:
	case *timeout <= 0:
		err = fmt.Errorf("--timeout %s: must be positive", *timeout)
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q: only --interfaces and --timeout are accepted", fs.Arg(0))
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return ExitBadFlags
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	start := time.Now()
	if err := Wait(ctx, names, *timeout, pollInterval); err != nil {
		writeTerminationMessage(err.Error())
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return ExitNotReady
	}
	fmt.Fprintf(stdout, "%s: %v up after %s\n", prog, names, time.Since(start).Round(time.Millisecond))
	return ExitReady
}

// writeTerminationMessage puts msg where `kubectl describe pod` shows it.
// Outside a container there is no such file, and none is created.
func writeTerminationMessage(msg string) {
	f, err := os.OpenFile(terminationLog, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(msg)
}
