//go:build bench

package webhook

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/hack/image"
	"podnet.io/podnet/test/bench"
	"podnet.io/podnet/test/testenv"
)

// TestBenchWaitFootprint measures what the wait init container's command
// needs, which sizes DefaultWaitCPU and DefaultWaitMemory: the real
// podnet-wait, built stripped as the wait image holds it, once succeeding
// at once (its start) and once waiting in a network namespace of its own
// for an interface that never comes (its steady state); then the same for
// `podnet-agent wait`, the agent binary the container ran before, for
// comparison. Peak memory is the waiting process' high-water RSS, with
// its heap and stacks (RssAnon) and pages of the binary (RssFile) sampled
// apart; CPU is its user + system time. It also prints the sizes of the binary and of
// the wait image's tarball.
func TestBenchWaitFootprint(t *testing.T) {
	dir := t.TempDir()
	wait := filepath.Join(dir, "podnet-wait")
	if err := image.BuildGoBinary(context.Background(), testenv.RepoRoot(t), image.WaitCommand, wait); err != nil {
		t.Fatal(err)
	}
	agent := BuildCommand(t, "./cmd/podnet-agent")
	built, err := image.WriteSpecs(dir, image.WaitSpec(dir, "bench"))
	if err != nil {
		t.Fatal(err)
	}
	for name, file := range map[string]string{"wait_binary_size": wait, "wait_image_tarball_size": built[image.Ref(image.WaitName, "bench")], "wait_agent_binary_size": agent} {
		st, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("BENCH %s %.2f MB\n", name, float64(st.Size())/1e6)
	}
	for _, c := range []struct {
		prefix string
		argv   func(args []string) []string
	}{
		{"wait", func(args []string) []string { return append([]string{wait}, args...) }},
		{"wait_agent", func(args []string) []string { return append([]string{agent, "wait"}, args...) }},
	} {
		// lo exists in the test's network namespace: the command returns
		// at once, so this is the cost of its start.
		measureWait(t, c.prefix+"_start", c.argv, []string{"lo"}, 5*time.Second, false)
		measureWait(t, c.prefix+"_waiting_5s", c.argv, []string{"pnbench0"}, bench.Size(5*time.Second, time.Second), true)
	}
}

// measureWait runs the wait container's command line for ifaces, in a
// network namespace of its own when newNetNS, and prints its footprint.
func measureWait(t *testing.T, name string, argv func([]string) []string, ifaces []string, timeout time.Duration, newNetNS bool) {
	c := waitContainer(WaitOptions{Image: DefaultWaitImage, Timeout: timeout}, &corev1.Pod{}, ifaces)
	a := argv(c.Args)
	cmd := exec.Command(a[0], a[1:]...)
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
	var hwm, anon, file int64
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-time.After(20 * time.Millisecond):
			st := procStatus(pid)
			hwm, anon, file = max(hwm, st["VmHWM"]), max(anon, st["RssAnon"]), max(file, st["RssFile"])
		}
	}
	ps := cmd.ProcessState
	if ps == nil {
		t.Fatalf("%s: no process state", name)
	}
	cpu := ps.UserTime() + ps.SystemTime()
	// Peak RSS is the process' own high-water mark (VmHWM), sampled every
	// 20 ms: only a process that lives longer has one. The rusage maxrss
	// would not do: Go starts a child sharing the parent's memory until
	// exec, and the kernel keeps that memory's peak in the child's maxrss.
	if hwm > 0 {
		fmt.Printf("BENCH %s_peak_rss %.1f MiB\n", name, float64(hwm)/1024)
		fmt.Printf("BENCH %s_peak_rss_anon %.1f MiB\n", name, float64(anon)/1024)
		fmt.Printf("BENCH %s_peak_rss_file %.1f MiB\n", name, float64(file)/1024)
	}
	fmt.Printf("BENCH %s_cpu %.0f ms\n", name, float64(cpu)/float64(time.Millisecond))
	if newNetNS {
		fmt.Printf("BENCH %s_cpu_rate %.1f millicores\n", name, 1000*cpu.Seconds()/timeout.Seconds())
	}
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
