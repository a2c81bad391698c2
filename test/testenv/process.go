package testenv

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Process is a command a test started; it is stopped by its PID.
type Process struct {
	Cmd  *exec.Cmd
	done chan struct{}
}

// StartProcess starts cmd so that it dies with the test binary
// (Pdeathsig), and registers a cleanup that stops it by its PID: SIGTERM,
// then SIGKILL after grace. onFailure, if not nil, runs after the process is
// stopped when the test failed, to show its log.
func StartProcess(t testing.TB, cmd *exec.Cmd, grace time.Duration, onFailure func()) *Process {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	p := &Process{Cmd: cmd, done: make(chan struct{})}
	// The exit status is irrelevant: the test decides when it ends.
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.Stop(t, syscall.SIGTERM, grace)
		if t.Failed() && onFailure != nil {
			onFailure()
		}
	})
	return p
}

// Stop signals the process by its PID and waits up to grace for it to exit,
// then kills it. Stopping an exited process does nothing.
func (p *Process) Stop(t testing.TB, sig syscall.Signal, grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.Cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		t.Errorf("%s (pid %d) did not exit after %v; killing it", filepath.Base(p.Cmd.Path), p.Cmd.Process.Pid, sig)
		_ = p.Cmd.Process.Kill()
		<-p.done
	}
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// AdminKubeconfig writes a kubeconfig for a new user of the env in group
// system:masters and returns its path, for commands the test runs.
func (e *Env) AdminKubeconfig(t testing.TB, user string) string {
	t.Helper()
	u, err := e.Env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, e.Config)
	if err != nil {
		t.Fatalf("add user %q: %v", user, err)
	}
	data, err := u.KubeConfig()
	if err != nil {
		t.Fatalf("kubeconfig of %q: %v", user, err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatalf("write kubeconfig: %v", err)
	}
	return path
}

// Tail is the last n bytes of s, for showing the end of a process's log.
func Tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// FreeAddr returns a loopback address with a port nobody listens on, for a
// process the test starts.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}
