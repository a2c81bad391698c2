package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"podnet.io/podnet/hack/image"
)

// childrenOf lists the processes whose parent is pid, with their state
// letter (Z for a zombie), from /proc.
func childrenOf(t *testing.T, pid int) map[int]string {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	kids := map[int]string{}
	for _, d := range dirs {
		child, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		f, err := os.Open(filepath.Join("/proc", d.Name(), "status"))
		if err != nil {
			continue // exited meanwhile
		}
		var state string
		ppid := -1
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "State:"); ok {
				state = strings.Fields(v)[0]
			}
			if v, ok := strings.CutPrefix(sc.Text(), "PPid:"); ok {
				ppid, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		f.Close()
		if ppid == pid {
			kids[child] = state
		}
	}
	return kids
}

// TestRootPauseReapsOrphans runs pause as PID 1 of a new PID namespace, as
// in a pod that shares its process namespace, orphans a process inside it,
// and checks that pause reaps it instead of leaving a zombie, then stops
// cleanly on SIGTERM.
func TestRootPauseReapsOrphans(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("TestRootPauseReapsOrphans creates a PID namespace: run it as root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "pause")
	if err := image.BuildGoBinary(ctx, ".", ".", bin); err != nil {
		t.Fatal(err)
	}
	pause := exec.Command(bin)
	pause.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if err := pause.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var pauseErr error
	go func() { pauseErr = pause.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = pause.Process.Kill()
			<-exited
		}
	})
	pid := pause.Process.Pid
	// Give pause time to install its signal handlers before anything
	// depends on them.
	time.Sleep(200 * time.Millisecond)

	// sh runs inside pause's PID namespace, starts sleep and exits at once:
	// the kernel hands the orphaned sleep to that namespace's init, pause.
	// sleep must not hold nsenter's output pipe, or CombinedOutput would
	// wait for sleep to end and pause might reap it before we look.
	if out, err := exec.CommandContext(ctx, "nsenter", "--target", strconv.Itoa(pid), "--pid", "--", "/bin/busybox", "sh", "-c", "/bin/busybox sleep 2 </dev/null >/dev/null 2>&1 & exit 0").CombinedOutput(); err != nil {
		t.Fatalf("orphan a process under pause: %v\n%s", err, out)
	}
	kids := childrenOf(t, pid)
	if len(kids) == 0 {
		t.Fatal("the orphaned sleep was not handed to pause; the test proves nothing")
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(kids) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		kids = childrenOf(t, pid)
	}
	if len(kids) > 0 {
		t.Fatalf("children of pause still there 10s after they exited (state by pid: %v)", kids)
	}

	if err := pause.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if pauseErr != nil {
			t.Errorf("pause after SIGTERM: %v, want exit 0", pauseErr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pause did not exit within 10s of SIGTERM")
	}
}
