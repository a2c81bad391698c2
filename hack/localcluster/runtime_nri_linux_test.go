package localcluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestRootContainerd2StartsWithNRIDefaultValidator starts containerd 2
// with the rendered configuration, validator on, in a throwaway folder
// (it binds nothing but its own sockets and a loopback stream port, and
// runs no pod) and waits for its gRPC and NRI sockets: NRI came up with
// the validator. The test stops it by its PID.
func TestRootContainerd2StartsWithNRIDefaultValidator(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("%s starts containerd: run it as root", t.Name())
	}
	root, bin := containerd2(t)
	// Short: the sockets' paths must fit sun_path.
	dir, err := os.MkdirTemp("", "pn-nri-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := nriPaths(dir, true)
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(Containerd2Config(p, filepath.Join(Containerd2BinDir(root), Containerd2Shim), "pause:1", SnapshotterNative)), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	log := func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for _, sock := range []string{p.Socket, p.nriSocket()} {
		for {
			if fi, err := os.Stat(sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
				break
			}
			select {
			case err := <-exited:
				t.Fatalf("containerd exited: %v\n%s", err, log())
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("no socket %s after 60 s:\n%s", sock, log())
			}
		}
	}
}
