package localcluster

import (
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestRuncsOf starts a process whose command line is that of a runc a
// shim started on one node's runc root, finds it by that root and not
// by another node's, and stops it as Down does.
func TestRuncsOf(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "n1", "runc")
	// bash runs the command list itself rather than exec it, so the
	// process keeps the argv given to exec -a.
	cmd := exec.Command("bash", "-c", `exec -a runc bash -c 'sleep 60; :' --root "$0" --log x create id`, filepath.Join(root, "k8s.io"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	pidOf := func(rs []procRecord) []int {
		var out []int
		for _, r := range rs {
			out = append(out, r.PID)
		}
		return out
	}
	// Until bash has run exec, the process has its first command line.
	var got []int
	for range 100 {
		if got = pidOf(runcsOf(root)); slices.Contains(got, cmd.Process.Pid) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !slices.Contains(got, cmd.Process.Pid) {
		t.Fatalf("runcsOf(%q) = %v, want pid %d among them", root, got, cmd.Process.Pid)
	}
	other := filepath.Join(dir, "n2", "runc")
	if got := pidOf(runcsOf(other)); slices.Contains(got, cmd.Process.Pid) {
		t.Errorf("runcsOf(%q) = %v, has pid %d of another root", other, got, cmd.Process.Pid)
	}
	for _, r := range runcsOf(root) {
		if err := stopProcess(r, 0); err != nil {
			t.Fatal(err)
		}
	}
	if len(runcsOf(root)) != 0 {
		t.Errorf("runcsOf(%q) after stopping: %v", root, runcsOf(root))
	}
}
