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

func TestReadSchedSumsThreadsOfNamedProcesses(t *testing.T) {
	proc := t.TempDir()
	writeTask(t, proc, "10", "podnet-agent", "10", "1000000 3000000 5")
	writeTask(t, proc, "10", "podnet-agent", "11", "2000000 1000000 7")
	writeTask(t, proc, "20", "containerd", "20", "4000000 2000000 1")
	writeTask(t, proc, "30", "kubelet", "30", "9000000 9000000 1")
	if err := os.MkdirAll(filepath.Join(proc, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := readSched(proc, scheduled)
	if err != nil {
		t.Fatal(err)
	}
	want := procSched{
		"podnet-agent": {10: {run: 3 * time.Millisecond, wait: 4 * time.Millisecond}},
		"containerd":   {20: {run: 4 * time.Millisecond, wait: 2 * time.Millisecond}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}

	// containerd restarted: its new PID has no reading to compare with.
	after := procSched{
		"podnet-agent": {10: {run: 5 * time.Millisecond, wait: 10 * time.Millisecond}},
		"containerd":   {21: {run: 9 * time.Millisecond, wait: 9 * time.Millisecond}},
	}
	var out bytes.Buffer
	reportSched(&out, "burst_nri_100_", "podnet_1", got, after)
	wantOut := "burst_nri_100_runqueue_wait_per_cpu_podnet_agent_podnet_1 3.00 x\n" +
		"burst: podnet_1: no scheduler counts of containerd\n"
	if out.String() != wantOut {
		t.Errorf("report:\n%s\nwant:\n%s", out.String(), wantOut)
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
