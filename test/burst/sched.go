package burst

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// schedStat is what the kernel's scheduler counted for the threads of one
// process (/proc/PID/task/*/schedstat): time on a CPU, and time runnable
// but waiting in a run queue for one. Wait against run tells whether a
// process was starved of CPU beside the others, which CPU time alone
// cannot: on a saturated node every process waits, and one whose cgroup
// weighs little waits longer for each millisecond it runs.
type schedStat struct{ run, wait time.Duration }

// scheduled are the node processes whose schedStat the bench reads.
var scheduled = []string{"podnet-agent", "containerd"}

// procSched is the schedStat of each process of one command name, by PID:
// a process that restarts between two readings is a new PID, counted in
// neither.
type procSched map[string]map[int]schedStat

// readSched sums schedStat over the threads of each process under proc
// (normally /proc) whose command name is one of comms. A thread that
// exits takes its counts along; Go's threads rarely do.
func readSched(proc string, comms []string) (procSched, error) {
	dirs, err := os.ReadDir(proc)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", proc, err)
	}
	out := procSched{}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(proc, d.Name(), "comm"))
		if err != nil {
			continue // gone since the listing
		}
		name := strings.TrimSpace(string(comm))
		if !slices.Contains(comms, name) {
			continue
		}
		tasks, _ := filepath.Glob(filepath.Join(proc, d.Name(), "task", "*", "schedstat"))
		var s schedStat
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			run, wait, err := parseSchedstat(string(b))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			s.run += run
			s.wait += wait
		}
		if out[name] == nil {
			out[name] = map[int]schedStat{}
		}
		out[name][pid] = s
	}
	return out, nil
}

// parseSchedstat reads a schedstat line: nanoseconds on a CPU, nanoseconds
// waiting in a run queue, time slices.
func parseSchedstat(line string) (run, wait time.Duration, err error) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return 0, 0, fmt.Errorf("schedstat %q: want at least 2 fields", line)
	}
	r, err1 := strconv.ParseInt(f[0], 10, 64)
	w, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("schedstat %q: not two numbers", line)
	}
	return time.Duration(r), time.Duration(w), nil
}

// reportSched prints, for each command of scheduled, its processes'
// run-queue wait per millisecond on a CPU during an arm, over the
// processes that ran from its start to its end.
func reportSched(w io.Writer, pfx, arm string, before, after procSched) {
	for _, name := range scheduled {
		var run, wait time.Duration
		for pid, a := range after[name] {
			if b, ok := before[name][pid]; ok {
				run += a.run - b.run
				wait += a.wait - b.wait
			}
		}
		if run <= 0 {
			fmt.Fprintf(w, "burst: %s: no scheduler counts of %s\n", arm, name)
			continue
		}
		fmt.Fprintf(w, "%srunqueue_wait_per_cpu_%s_%s %.2f x\n", pfx, strings.ReplaceAll(name, "-", "_"), arm, float64(wait)/float64(run))
	}
}
