package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A process record is "<pid> <start time>" in run/<name>.pid. The start
// time (field 22 of /proc/<pid>/stat) guards against signalling an
// unrelated process that reused a recorded PID.

// startProcess starts a long-running command in netns nsName (none for
// ""), detached in its own session so it outlives the caller, with output
// in logs/<name>.log, and records its PID. nsenter execs the command, so
// the recorded PID is the component itself. Only the network namespace is
// entered: mounts made by containerd and kubelet must stay visible to the
// rest of the machine.
func startProcess(dir, name, nsName string, argv []string) (int, error) {
	if nsName != "" {
		argv = append([]string{"nsenter", "--net=" + netnsPath(nsName), "--"}, argv...)
	}
	logDir := filepath.Join(dir, "logs")
	runDir := filepath.Join(dir, "run")
	for _, d := range []string{logDir, runDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return 0, fmt.Errorf("create %q: %w", d, err)
		}
	}
	logFile, err := os.OpenFile(filepath.Join(logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("open log of %s: %w", name, err)
	}
	defer logFile.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s (%s): %w", name, strings.Join(argv, " "), err)
	}
	pid := cmd.Process.Pid
	// Reap it in the background if it exits while this process lives, so
	// a dead component does not linger as a zombie that looks alive.
	go func() { _ = cmd.Wait() }()
	start, err := procStartTime(pid)
	if err != nil {
		return 0, fmt.Errorf("%s exited at once (pid %d), see %s: %w", name, pid, logFile.Name(), err)
	}
	rec := fmt.Sprintf("%d %d\n", pid, start)
	if err := os.WriteFile(filepath.Join(runDir, name+".pid"), []byte(rec), 0o644); err != nil {
		return 0, fmt.Errorf("record pid of %s: %w", name, err)
	}
	return pid, nil
}

// procStartTime reads a process's start time in clock ticks since boot.
func procStartTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may contain spaces; fields after the last
	// ')' are fixed. Start time is field 22, i.e. the 20th after ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, fmt.Errorf("process %d is a zombie", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

type procRecord struct {
	Name  string
	PID   int
	Start uint64
}

// readRecords lists the recorded processes of a cluster folder.
func readRecords(dir string) ([]procRecord, error) {
	files, err := filepath.Glob(filepath.Join(dir, "run", "*.pid"))
	if err != nil {
		return nil, err
	}
	var recs []procRecord
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var r procRecord
		if _, err := fmt.Sscanf(string(b), "%d %d", &r.PID, &r.Start); err != nil {
			continue
		}
		r.Name = strings.TrimSuffix(filepath.Base(f), ".pid")
		recs = append(recs, r)
	}
	return recs, nil
}

// alive reports whether the recorded process still runs (same PID, same
// start time).
func (r procRecord) alive() bool {
	st, err := procStartTime(r.PID)
	return err == nil && st == r.Start
}

// stopProcess sends SIGTERM, waits up to grace, then SIGKILL, and waits
// for the process to be gone. A process already gone is success.
func stopProcess(r procRecord, grace time.Duration) error {
	if !r.alive() {
		return nil
	}
	if err := syscall.Kill(r.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %s (pid %d): %w", r.Name, r.PID, err)
	}
	if waitGone(r, grace) {
		return nil
	}
	if err := syscall.Kill(r.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s (pid %d): %w", r.Name, r.PID, err)
	}
	if waitGone(r, 10*time.Second) {
		return nil
	}
	return fmt.Errorf("%s (pid %d) still running after SIGKILL", r.Name, r.PID)
}

func waitGone(r procRecord, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !r.alive() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return !r.alive()
}
