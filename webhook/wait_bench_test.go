//go:build bench

package webhook

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestBenchWaitFootprint measures what the wait init container's command
// needs, which sizes DefaultWaitCPU and DefaultWaitMemory: the real
// `podnet-agent wait` once succeeding at once (its start) and once
// waiting in a network namespace of its own for an interface that never
// comes (its steady state). Peak memory is the process' maximum RSS, with
// its heap and stacks (RssAnon) and pages of the binary (RssFile) sampled
// apart; CPU is its user + system time.
func TestBenchWaitFootprint(t *testing.T) {
	bin := BuildCommand(t, "./agent/cmd/podnet-agent")
	run := func(name string, ifaces []string, timeout time.Duration, newNetNS bool) {
		c := waitContainer(WaitOptions{Image: DefaultWaitImage, Timeout: timeout}, &corev1.Pod{}, ifaces)
		cmd := exec.Command(bin, c.Args...)
		if newNetNS {
			cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		defer cmd.Process.Kill()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var anon, file int64
		for running := true; running; {
			select {
			case <-done:
				running = false
			case <-time.After(20 * time.Millisecond):
				st := procStatus(pid)
				anon, file = max(anon, st["RssAnon"]), max(file, st["RssFile"])
			}
		}
		ps := cmd.ProcessState
		if ps == nil {
			t.Fatalf("%s: no process state", name)
		}
		cpu := ps.UserTime() + ps.SystemTime()
		fmt.Printf("BENCH wait_%s_peak_rss %.1f MiB\n", name, float64(ps.SysUsage().(*syscall.Rusage).Maxrss)/1024)
		if anon > 0 {
			// Sampled every 20 ms: only a process that lives longer has them.
			fmt.Printf("BENCH wait_%s_peak_rss_anon %.1f MiB\n", name, float64(anon)/1024)
			fmt.Printf("BENCH wait_%s_peak_rss_file %.1f MiB\n", name, float64(file)/1024)
		}
		fmt.Printf("BENCH wait_%s_cpu %.0f ms\n", name, float64(cpu)/float64(time.Millisecond))
		if newNetNS {
			fmt.Printf("BENCH wait_%s_cpu_rate %.1f millicores\n", name, 1000*cpu.Seconds()/timeout.Seconds())
		}
	}
	// lo exists in the test's network namespace: the command returns at
	// once, so this is the cost of its start.
	run("start", []string{"lo"}, 5*time.Second, false)
	run("waiting_5s", []string{"pnbench0"}, 5*time.Second, true)
}

// procStatus reads the kB fields of /proc/<pid>/status; a process that
// has just exited yields none.
func procStatus(pid int) map[string]int64 {
	out := map[string]int64{}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return out
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if f := strings.Fields(v); ok && len(f) == 2 && f[1] == "kB" {
			if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				out[k] = n
			}
		}
	}
	return out
}
