package image

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testContainerd is a containerd started by a test with its own root, state
// and socket, so it shares nothing with the machine's or a cluster's.
type testContainerd struct {
	dir, socket string
}

// startContainerd starts containerd without its CRI plugin (nothing here
// needs Kubernetes) and stops it by PID when the test ends.
func startContainerd(t *testing.T) *testContainerd {
	t.Helper()
	dir := t.TempDir()
	c := &testContainerd{dir: dir, socket: filepath.Join(dir, "containerd.sock")}
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = %q
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), c.socket, filepath.Join(dir, "opt"))
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "containerd.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("containerd", "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start containerd: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Errorf("containerd pid %d ignored SIGTERM; killing it", cmd.Process.Pid)
			_ = cmd.Process.Kill()
			<-done
		}
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("containerd log:\n%s", b)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := c.ctr(context.Background(), "version"); err == nil {
			return c
		}
		select {
		case err := <-done:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("containerd exited: %v\n%s", err, b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("containerd did not answer on %s within 20s", c.socket)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ctr runs ctr against this containerd in the namespace the kubelet uses.
func (c *testContainerd) ctr(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "ctr", append([]string{"--address", c.socket, "--namespace", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// removeContainer deletes a test container and its task whatever state they
// are in, so no shim outlives the test.
func (c *testContainerd) removeContainer(t *testing.T, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := c.ctr(ctx, "tasks", "ls", "-q"); err == nil && slices.Contains(strings.Fields(out), id) {
		if _, err := c.ctr(ctx, "tasks", "rm", "-f", id); err != nil {
			t.Errorf("remove task %q: %v", id, err)
		}
	}
	if out, err := c.ctr(ctx, "containers", "ls", "-q"); err == nil && slices.Contains(strings.Fields(out), id) {
		if _, err := c.ctr(ctx, "containers", "rm", id); err != nil {
			t.Errorf("remove container %q: %v", id, err)
		}
	}
}

func containerID(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "pntest-" + hex.EncodeToString(b)
}

// TestRootImportAndRun builds every image the way `make image` and the
// cluster harness do, imports the tarballs into a real containerd 1.6,
// checks their names, runs busybox's `ip link` in a fresh network namespace,
// and checks that pause, as PID 1, exits cleanly on SIGTERM.
func TestRootImportAndRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("TestRootImportAndRun starts containerd and runs containers: run it as root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}

	tarballs, err := EnsureTestImages(ctx, root)
	if err != nil {
		t.Fatalf("test images: %v", err)
	}
	bin := t.TempDir()
	for _, pkg := range append([]string{"./cmd/podnet-webhook"}, AgentCommands...) {
		if err := BuildGoBinary(ctx, root, pkg, filepath.Join(bin, filepath.Base(pkg))); err != nil {
			t.Fatal(err)
		}
	}
	const tag = "import-test"
	built, err := WriteSpecs(t.TempDir(), WebhookSpec(bin, tag), AgentSpec(bin, tag), WaitSpec(bin, tag))
	if err != nil {
		t.Fatal(err)
	}
	for ref, p := range built {
		tarballs[ref] = p
	}
	want := []string{PauseImage, BusyboxImage, Ref(WebhookName, tag), Ref(AgentName, tag), Ref(WaitName, tag)}
	for _, ref := range want {
		if tarballs[ref] == "" {
			t.Fatalf("no tarball for %s among %v", ref, tarballs)
		}
	}

	c := startContainerd(t)
	for ref, p := range tarballs {
		// native: the snapshotter the local cluster's containerd uses.
		if _, err := c.ctr(ctx, "images", "import", "--snapshotter", "native", p); err != nil {
			t.Fatalf("import %s: %v", ref, err)
		}
	}
	out, err := c.ctr(ctx, "images", "ls", "-q")
	if err != nil {
		t.Fatal(err)
	}
	listed := strings.Fields(out)
	slices.Sort(listed)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Fatalf("ctr images ls = %v, want %v", listed, want)
	}

	t.Run("busybox ip link", func(t *testing.T) {
		id := containerID(t)
		t.Cleanup(func() { c.removeContainer(t, id) })
		out, err := c.ctr(ctx, "run", "--rm", "--snapshotter", "native", BusyboxImage, id, "ip", "link")
		if err != nil {
			t.Fatal(err)
		}
		// A fresh network namespace holds only the loopback device.
		if !strings.Contains(out, "1: lo: <LOOPBACK") || strings.Contains(out, "2: ") {
			t.Errorf("ip link in the container printed:\n%s\nwant only lo", out)
		}
	})

	t.Run("busybox runs as root", func(t *testing.T) {
		id := containerID(t)
		t.Cleanup(func() { c.removeContainer(t, id) })
		out, err := c.ctr(ctx, "run", "--rm", "--snapshotter", "native", BusyboxImage, id, "id", "-u")
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(out) != "0" {
			t.Errorf("id -u = %q, want 0", out)
		}
	})

	// The real binaries run in their images: static, non-root, at the path
	// the image names. -h prints the flags and exits without side effects.
	// (ctr run replaces the entrypoint too when given a command.)
	for ref, binary := range map[string]string{Ref(WebhookName, tag): WebhookBinary, Ref(AgentName, tag): AgentBinary} {
		t.Run(ref+" runs", func(t *testing.T) {
			id := containerID(t)
			t.Cleanup(func() { c.removeContainer(t, id) })
			out, err := c.ctr(ctx, "run", "--rm", "--snapshotter", "native", ref, id, binary, "-h")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "Usage of "+binary) {
				t.Errorf("%s -h printed:\n%s\nwant its usage", ref, out)
			}
		})
	}

	// podnet-wait, non-root in its image, in the container's fresh network
	// namespace: lo is there, net1 is not, so waiting for both ends at the
	// timeout with status 1 naming net1, and waiting for lo alone succeeds.
	t.Run("wait image waits in its own netns", func(t *testing.T) {
		id := containerID(t)
		t.Cleanup(func() { c.removeContainer(t, id) })
		run := exec.Command("ctr", "--address", c.socket, "--namespace", "k8s.io", "run", "--rm", "--snapshotter", "native",
			Ref(WaitName, tag), id, WaitBinary, "--interfaces", "lo,net1", "--timeout", "300ms")
		out, err := run.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "net1 (absent)") || strings.Contains(string(out), "lo (") {
			t.Fatalf("podnet-wait --interfaces lo,net1 in its image: %v, want exit status 1 naming net1 only\n%s", err, out)
		}
		id2 := containerID(t)
		t.Cleanup(func() { c.removeContainer(t, id2) })
		if out, err := c.ctr(ctx, "run", "--rm", "--snapshotter", "native", Ref(WaitName, tag), id2, WaitBinary, "--interfaces", "lo"); err != nil || !strings.Contains(out, "[lo] up after") {
			t.Fatalf("podnet-wait --interfaces lo in its image: %v\n%s", err, out)
		}
		id3 := containerID(t)
		t.Cleanup(func() { c.removeContainer(t, id3) })
		if out, err := c.ctr(ctx, "run", "--rm", "--snapshotter", "native", Ref(WaitName, tag), id3, "/usr/bin/id"); err == nil {
			t.Errorf("the wait image runs /usr/bin/id, want nothing but podnet-wait in it:\n%s", out)
		}
	})

	t.Run("pause stops on SIGTERM", func(t *testing.T) {
		id := containerID(t)
		t.Cleanup(func() { c.removeContainer(t, id) })
		run := exec.Command("ctr", "--address", c.socket, "--namespace", "k8s.io", "run", "--rm", "--snapshotter", "native", PauseImage, id)
		var output strings.Builder
		run.Stdout, run.Stderr = &output, &output
		run.WaitDelay = 5 * time.Second
		if err := run.Start(); err != nil {
			t.Fatal(err)
		}
		// exited is closed, never sent on, so the cleanup can tell whether
		// ctr already returned however many times it looks.
		exited := make(chan struct{})
		var runErr error
		go func() { runErr = run.Wait(); close(exited) }()
		t.Cleanup(func() {
			select {
			case <-exited:
			default:
				_ = run.Process.Kill()
				<-exited
			}
		})
		waitForTask(t, c, id, "RUNNING")
		// The task is RUNNING from exec on, but pause handles SIGTERM only
		// once the Go runtime has started and main has called
		// signal.Notify; until then the kernel drops the signal (PID 1 has
		// no default action for it). So send it again each second, as a
		// kubelet's retry would, until pause exits.
		deadline := time.After(20 * time.Second)
		for done := false; !done; {
			if _, err := c.ctr(ctx, "tasks", "kill", "--signal", "SIGTERM", id); err != nil {
				select {
				case <-exited: // it exited between the check and the kill
				default:
					t.Fatal(err)
				}
			}
			select {
			case <-exited:
				done = true
			case <-time.After(time.Second):
			case <-deadline:
				t.Fatal("pause did not exit within 20s of SIGTERM")
			}
		}
		// ctr run exits with the task's status: 0 means pause handled
		// SIGTERM itself.
		if runErr != nil {
			t.Fatalf("pause after SIGTERM: %v\n%s", runErr, output.String())
		}
	})
}

func waitForTask(t *testing.T, c *testContainerd, id, status string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		out, _ := c.ctr(context.Background(), "tasks", "ls")
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == id && f[2] == status {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("task %q not %s within 20s", id, status)
}
