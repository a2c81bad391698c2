package podwait

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"podnet.io/podnet/api/wait"
)

// Exit codes of Run.
const (
	ExitReady    = 0
	ExitNotReady = 1
	ExitBadFlags = 2
)

// DefaultTimeout is --timeout when the flag is absent.
const DefaultTimeout = wait.DefaultTimeout

// pollInterval is how often the links are listed while waiting: one dump
// of the pod's few links costs microseconds, and the app starts at most
// this late after its last interface comes up.
const pollInterval = 50 * time.Millisecond

// DefaultTerminationLog is the file the kubelet mounts for a container's
// termination message (terminationMessagePath's default), which `kubectl
// describe pod` shows.
const DefaultTerminationLog = "/dev/termination-log"

// Run is the whole wait command, shared by the podnet-wait binary and
// `podnet-agent wait`: it parses args (--interfaces, --timeout), waits, and
// returns ExitReady once every interface is up, ExitNotReady with a
// message naming what is missing, or ExitBadFlags with one naming the flag.
// prog names the command in its messages.
func Run(prog string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	termLog := fs.String("termination-log", DefaultTerminationLog, "file for the termination message: what is missing, or what is up, and the run's usage")
	names, timeout, ok := parseWait(fs, args, stderr)
	if !ok {
		return ExitBadFlags
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	start := time.Now()
	err := Wait(ctx, names, timeout, pollInterval)
	u := usage(time.Since(start))
	if err != nil {
		writeTerminationMessage(*termLog, err.Error()+" "+u.String())
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return ExitNotReady
	}
	writeTerminationMessage(*termLog, strings.Join(names, ",")+" up "+u.String())
	fmt.Fprintf(stdout, "%s: %v up after %s\n", prog, names, u.Waited.Round(time.Millisecond))
	return ExitReady
}

// parseWait parses the wait's flags (--interfaces, --timeout, and what fs
// defines besides) into the names and the timeout; a bad one is named on
// stderr, and ok is false.
func parseWait(fs *flag.FlagSet, args []string, stderr io.Writer) (names []string, timeout time.Duration, ok bool) {
	fs.SetOutput(stderr)
	list := fs.String(wait.InterfacesFlag, "", "comma-separated interface names to wait for, e.g. net1,net2")
	t := fs.Duration(wait.TimeoutFlag, DefaultTimeout, "how long to wait")
	if err := fs.Parse(args); err != nil {
		return nil, 0, false
	}
	names, err := ParseInterfaces(*list)
	switch {
	case err != nil:
	case *t <= 0:
		err = fmt.Errorf("--timeout %s: must be positive", *t)
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q: only --interfaces and --timeout are accepted", fs.Arg(0))
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return nil, 0, false
	}
	return names, *t, true
}

// usage is this process's usage so far, having waited that long. The
// peak resident set is VmHWM, not getrusage's maxrss, which keeps the
// peak of the program this process was before its exec (the runtime's
// init, or ip netns exec). The cgroup's peak is read where the container
// sees its own cgroup (cgroupPeakFiles).
func usage(waited time.Duration) Usage {
	u := Usage{Waited: waited, CgroupPeak: -1}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kib, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64)
				u.MaxRSS = kib << 10
			}
		}
	}
	for _, f := range cgroupPeakFiles {
		if b, err := os.ReadFile(f); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				u.CgroupPeak = n
				break
			}
		}
	}
	return u
}

// cgroupPeakFiles hold the container cgroup's peak memory as a container
// sees it: cgroup v2 (its own cgroup at /sys/fs/cgroup), then v1 (the
// runtime mounts the container's memory cgroup at /sys/fs/cgroup/memory).
var cgroupPeakFiles = []string{"/sys/fs/cgroup/memory.peak", "/sys/fs/cgroup/memory/memory.max_usage_in_bytes"}

// writeTerminationMessage puts msg where `kubectl describe pod` shows it.
// Outside a container there is no such file, and none is created.
func writeTerminationMessage(path, msg string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(msg)
}
