package burst

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// schedStat is what the kernel's scheduler counted for a thread
// (/proc/PID/task/TID/schedstat): time on a CPU, and time runnable but
// waiting in a run queue for one. Wait against run tells whether a
// process was starved of CPU beside the others, which CPU time alone
// cannot: on a saturated node every process waits, and one whose cgroup
// weighs little waits longer for each millisecond it runs.
type schedStat struct{ run, wait time.Duration }

func (s schedStat) add(o schedStat) schedStat { return schedStat{s.run + o.run, s.wait + o.wait} }
func (s schedStat) sub(o schedStat) schedStat { return schedStat{s.run - o.run, s.wait - o.wait} }

// scheduled are the node processes whose run-queue wait the bench prints.
var scheduled = []string{"podnet-agent", "containerd"}

// counted are the node processes whose schedStat the bench reads: those
// of scheduled, and every other long-lived process of the cluster, by the
// kernel's command name (cut to 15 bytes), to see whose CPU a podnet arm
// adds. Short-lived ones (runc, CNI plugins) only show in the node's
// total.
var counted = append(slices.Clone(scheduled), "kube-apiserver", "etcd", "kubelet", "kube-scheduler",
	"kube-controller", "containerd-shim", "podnet-webhook", "podnet-controll")

// thread names one thread of a process of command name comm.
type thread struct {
	comm     string
	pid, tid int
}

// readThreads reads the schedStat of each thread of the processes under
// proc (normally /proc) whose command name is one of comms.
func readThreads(proc string, comms []string) (map[thread]schedStat, error) {
	dirs, err := os.ReadDir(proc)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", proc, err)
	}
	out := map[thread]schedStat{}
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
		for _, f := range tasks {
			tid, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			if err != nil {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				continue // the thread exited since the listing
			}
			run, wait, err := parseSchedstat(string(b))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			out[thread{name, pid, tid}] = schedStat{run, wait}
		}
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

// schedCounts adds up, per command name, what the scheduler counted for
// its processes' threads over an arm. Comparing one reading at the start
// with one at the end would not do: a thread's counts go when it exits,
// and containerd's threads come and go all the time (a goroutine that
// locked its thread, to enter a network namespace, and returns without
// unlocking ends that thread), so an arm's sum could even come out
// negative. Reading every thread often and adding each one's increments
// loses only what an exited thread ran since the last reading.
type schedCounts struct {
	proc  string
	comms []string

	mu     sync.Mutex
	last   map[thread]schedStat
	total  map[string]schedStat
	exited map[string]int // threads gone between two readings
	// node is the busy time of all the node's CPUs, from the first
	// reading to the last.
	node, nodeStart time.Duration
	err             error
}

// newSchedCounts takes the first reading: counts before it are not the
// arm's.
func newSchedCounts(proc string, comms []string) (*schedCounts, error) {
	last, err := readThreads(proc, comms)
	if err != nil {
		return nil, err
	}
	busy, err := readBusy(proc)
	if err != nil {
		return nil, err
	}
	return &schedCounts{proc: proc, comms: comms, last: last, nodeStart: busy, total: map[string]schedStat{}, exited: map[string]int{}}, nil
}

// userHz is the unit of /proc/stat's times: USER_HZ, 100 on every Linux
// architecture Go supports.
const userHz = 100

// readBusy reads the time all CPUs have been busy since boot, from the
// first line of /proc/stat: user, nice, system, irq, softirq and steal
// (not idle or iowait; guest time is within user).
func readBusy(proc string) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(proc, "stat"))
	if err != nil {
		return 0, fmt.Errorf("read the node's CPU times: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("%s: first line %q: want cpu and at least 8 times", filepath.Join(proc, "stat"), line)
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: field %d of %q: %w", filepath.Join(proc, "stat"), i, line, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / userHz, nil
}

// read takes one more reading. A thread seen before adds its increment;
// one not seen before started since the last reading, so all its counts
// are the arm's (a process that restarted is all new threads).
func (c *schedCounts) read() {
	cur, err := readThreads(c.proc, c.comms)
	busy, berr := readBusy(c.proc)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		err = berr
	}
	if err != nil {
		if c.err == nil {
			c.err = err
		}
		return
	}
	for th, s := range cur {
		if l, ok := c.last[th]; ok {
			s = s.sub(l)
		}
		c.total[th.comm] = c.total[th.comm].add(s)
	}
	for th := range c.last {
		if _, ok := cur[th]; !ok {
			c.exited[th.comm]++
		}
	}
	c.last = cur
	c.node = busy - c.nodeStart
}

// every reads every interval until stop is closed, then once more.
func (c *schedCounts) every(interval time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			c.read()
			return
		case <-tick.C:
			c.read()
		}
	}
}

// schedInterval is how often an arm reads its threads' counts: an
// exited thread loses at most this much of its counts, and each reading
// of a few hundred files costs the node well under a millisecond.
const schedInterval = 250 * time.Millisecond

// sampleSched reads the counts every schedInterval until the returned
// function is first called; it returns them, each time.
func sampleSched(proc string, comms []string) (func() (*schedCounts, error), error) {
	c, err := newSchedCounts(proc, comms)
	if err != nil {
		return nil, err
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		c.every(schedInterval, stop)
	}()
	var once sync.Once
	return func() (*schedCounts, error) {
		once.Do(func() { close(stop) })
		<-done
		c.mu.Lock()
		defer c.mu.Unlock()
		return c, c.err
	}, nil
}

// reportSched prints, for each command of scheduled, its processes'
// run-queue wait per unit of time on a CPU during an arm.
func reportSched(w io.Writer, pfx, arm string, c *schedCounts) {
	for _, name := range scheduled {
		s := c.total[name]
		if s.run <= 0 {
			fmt.Fprintf(w, "burst: %s: no scheduler counts of %s\n", arm, name)
			continue
		}
		fmt.Fprintf(w, "%srunqueue_wait_per_cpu_%s_%s %.2f x\n", pfx, strings.ReplaceAll(name, "-", "_"), arm, float64(s.wait)/float64(s.run))
		fmt.Fprintf(w, "burst: %s: %d threads of %s exited during the arm\n", arm, c.exited[name], name)
	}
}

// reportCPU prints the CPU time per pod of the arm of each command of
// counted, and of the whole node.
func reportCPU(w io.Writer, pfx, arm string, pods int, c *schedCounts) {
	perPod := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(pods) }
	for _, name := range counted {
		if s := c.total[name]; s.run > 0 {
			fmt.Fprintf(w, "%scpu_per_pod_%s_%s %.1f ms\n", pfx, strings.ReplaceAll(name, "-", "_"), arm, perPod(s.run))
		}
	}
	fmt.Fprintf(w, "%scpu_per_pod_node_%s %.1f ms\n", pfx, arm, perPod(c.node))
}
