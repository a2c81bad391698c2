package burst

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func writeTask(t *testing.T, proc, pid, comm, tid, schedstat string) {
	t.Helper()
	dir := filepath.Join(proc, pid, "task", tid)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, pid, "comm"), []byte(comm+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "schedstat"), []byte(schedstat+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeStat writes proc/stat with the given busy and idle ticks: user
// and system split the busy ones; iowait, also not busy, is 7.
func writeStat(t *testing.T, proc string, busy, idle int) {
	t.Helper()
	stat := fmt.Sprintf("cpu  %d 0 %d %d 7 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n", busy-busy/2, busy/2, idle)
	if err := os.WriteFile(filepath.Join(proc, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
}

func removeTask(t *testing.T, proc, pid, tid string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(proc, pid, "task", tid)); err != nil {
		t.Fatal(err)
	}
}

func TestReadThreadsOfNamedProcesses(t *testing.T) {
	proc := t.TempDir()
	writeTask(t, proc, "10", "podnet-agent", "10", "1000000 3000000 5")
	writeTask(t, proc, "10", "podnet-agent", "11", "2000000 1000000 7")
	writeTask(t, proc, "20", "containerd", "20", "4000000 2000000 1")
	writeTask(t, proc, "30", "kubelet", "30", "9000000 9000000 1")
	if err := os.MkdirAll(filepath.Join(proc, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := readThreads(proc, scheduled)
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	want := map[thread]schedStat{
		{"podnet-agent", 10, 10}: {1 * ms, 3 * ms},
		{"podnet-agent", 10, 11}: {2 * ms, 1 * ms},
		{"containerd", 20, 20}:   {4 * ms, 2 * ms},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for th, s := range want {
		if got[th] != s {
			t.Errorf("%v: got %v, want %v", th, got[th], s)
		}
	}
}

// Threads that exit between two readings keep what they ran until the
// last reading that saw them; threads and processes that start count
// whole.
func TestSchedCountsAddIncrementsAcrossThreadsThatComeAndGo(t *testing.T) {
	proc := t.TempDir()
	writeTask(t, proc, "10", "podnet-agent", "10", "1000000 3000000 5")
	writeTask(t, proc, "20", "containerd", "20", "50000000 50000000 1") // before the arm
	writeTask(t, proc, "20", "containerd", "21", "90000000 90000000 1")
	writeStat(t, proc, 1000, 5000)
	c, err := newSchedCounts(proc, scheduled)
	if err != nil {
		t.Fatal(err)
	}

	// Thread 21, with most of containerd's counts, runs 1 ms more and
	// is read, then exits; thread 22 starts.
	writeTask(t, proc, "20", "containerd", "21", "91000000 92000000 1")
	c.read()
	removeTask(t, proc, "20", "21")
	writeTask(t, proc, "20", "containerd", "22", "2000000 6000000 1")
	writeTask(t, proc, "10", "podnet-agent", "10", "3000000 7000000 5")
	writeStat(t, proc, 1250, 5100)
	c.read()

	// containerd restarts as PID 40.
	if err := os.RemoveAll(filepath.Join(proc, "20")); err != nil {
		t.Fatal(err)
	}
	writeTask(t, proc, "40", "containerd", "40", "1000000 2000000 1")
	c.read()

	ms := time.Millisecond
	if got, want := c.total["containerd"], (schedStat{4 * ms, 10 * ms}); got != want {
		t.Errorf("containerd: got %v, want %v (1+2+1 ms run, 2+6+2 ms wait)", got, want)
	}
	if got, want := c.total["podnet-agent"], (schedStat{2 * ms, 4 * ms}); got != want {
		t.Errorf("podnet-agent: got %v, want %v", got, want)
	}
	if got, want := c.node, 2500*time.Millisecond; got != want {
		t.Errorf("node: %v busy, want %v (250 ticks)", got, want)
	}
	if got := c.exited["containerd"]; got != 3 {
		t.Errorf("containerd: %d threads exited, want 3 (21, then 20 and 22)", got)
	}

	var out bytes.Buffer
	reportSched(&out, "burst_nri_100_", "podnet_1", c)
	wantOut := "burst_nri_100_runqueue_wait_per_cpu_podnet_agent_podnet_1 2.00 x\n" +
		"burst: podnet_1: 0 threads of podnet-agent exited during the arm\n" +
		"burst_nri_100_runqueue_wait_per_cpu_containerd_podnet_1 2.50 x\n" +
		"burst: podnet_1: 3 threads of containerd exited during the arm\n"
	if out.String() != wantOut {
		t.Errorf("report:\n%s\nwant:\n%s", out.String(), wantOut)
	}
}

func TestReportSchedWithoutCounts(t *testing.T) {
	proc := t.TempDir()
	writeStat(t, proc, 10, 10)
	c, err := newSchedCounts(proc, scheduled)
	if err != nil {
		t.Fatal(err)
	}
	c.read()
	var out bytes.Buffer
	reportSched(&out, "burst_", "podnet_1", c)
	want := "burst: podnet_1: no scheduler counts of podnet-agent\n" +
		"burst: podnet_1: no scheduler counts of containerd\n"
	if out.String() != want {
		t.Errorf("report:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestSampleSchedReadsUntilStopped(t *testing.T) {
	proc := t.TempDir()
	writeTask(t, proc, "20", "containerd", "20", "1000000 1000000 1")
	writeStat(t, proc, 10, 10)
	stop, err := sampleSched(proc, scheduled)
	if err != nil {
		t.Fatal(err)
	}
	writeTask(t, proc, "20", "containerd", "20", "3000000 5000000 1")
	c, err := stop()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.total["containerd"], (schedStat{2 * time.Millisecond, 4 * time.Millisecond}); got != want {
		t.Errorf("got %v, want %v", got, want)
	}
	if again, _ := stop(); again != c {
		t.Error("a second call returned other counts")
	}
}

func TestParseSchedstatRejectsShortLines(t *testing.T) {
	if _, _, err := parseSchedstat("12"); err == nil {
		t.Error("one field: no error")
	}
	if _, _, err := parseSchedstat("a b c"); err == nil {
		t.Error("not numbers: no error")
	}
}

func TestReadBusy(t *testing.T) {
	proc := t.TempDir()
	writeStat(t, proc, 333, 900)
	if got, err := readBusy(proc); err != nil || got != 3330*time.Millisecond {
		t.Errorf("got %v, %v; want 3.33s (333 ticks, idle and iowait left out)", got, err)
	}
	for _, bad := range []string{"intr 1 2 3\n", "cpu 1 2 3\n", "cpu 1 2 3 4 5 x 7 8 9 10\n"} {
		if err := os.WriteFile(filepath.Join(proc, "stat"), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readBusy(proc); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestReportCPU(t *testing.T) {
	c := &schedCounts{total: map[string]schedStat{
		"podnet-agent":   {run: 300 * time.Millisecond},
		"kube-apiserver": {run: 1500 * time.Millisecond},
	}, node: 9 * time.Second}
	var out bytes.Buffer
	reportCPU(&out, "burst_nri_n30_", "1_network", 30, c)
	want := "burst_nri_n30_cpu_per_pod_podnet_agent_1_network 10.0 ms\n" +
		"burst_nri_n30_cpu_per_pod_kube_apiserver_1_network 50.0 ms\n" +
		"burst_nri_n30_cpu_per_pod_node_1_network 300.0 ms\n"
	if out.String() != want {
		t.Errorf("report:\n%s\nwant:\n%s", out.String(), want)
	}
}
