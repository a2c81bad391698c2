package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"podnet.io/podnet/api/wait"
	"podnet.io/podnet/podwait"
)

// build compiles this command as the image carries it, stripped.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "podnet-wait")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// throwawayNetNS creates a named network namespace, removed when the test
// ends, and returns its name and a netlink handle into it.
func throwawayNetNS(t *testing.T) (string, *netlink.Handle) {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	name := "pntest-pwait-" + hex.EncodeToString(b)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	nsh, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nsh.Close() })
	h, err := netlink.NewHandleAt(nsh)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return name, h
}

// start runs the binary inside the namespace (ip netns exec) as the
// nobody-like user the image runs as, so it proves no privilege is needed.
func start(t *testing.T, bin, nsName string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", nsName, "setpriv", "--reuid=65532", "--regid=65532", "--clear-groups", bin}, args...)...)
	return cmd, launch(t, cmd)
}

// launch starts cmd with its output gathered, and kills it when the test
// ends if it has not been waited for.
func launch(t *testing.T, cmd *exec.Cmd) *bytes.Buffer {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return &out
}

// terminationLog is a file the unprivileged binary may write, as the
// kubelet makes one (mode 0666) for each container.
func terminationLog(t *testing.T) string {
	t.Helper()
	// Not under t.TempDir, whose parent only root may enter.
	dir, err := os.MkdirTemp("", "pntest-termlog-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "termination-log")
	if err := os.WriteFile(path, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkUsage reads the termination message at path: it starts with
// prefix and ends with the run's usage, which must show some CPU time and
// memory.
func checkUsage(t *testing.T, path, prefix string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	msg := string(b)
	u, err := podwait.ParseUsage(msg)
	if err != nil || !strings.HasPrefix(msg, prefix) || u.CPU <= 0 || u.MaxRSS <= 0 {
		t.Fatalf("termination message %q (usage %+v, %v): want %q, then the run's CPU time and memory", msg, u, err, prefix)
	}
	t.Logf("termination message: %s", msg)
}

// TestRootPodnetWaitExitsOnceInterfacesAreUp runs the stripped binary,
// unprivileged, in a throwaway namespace where net1 appears and comes up
// only after it started: it exits 0 after that, not before.
func TestRootPodnetWaitExitsOnceInterfacesAreUp(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("TestRootPodnetWaitExitsOnceInterfacesAreUp creates network namespaces: run it as root")
	}
	bin := build(t)
	name, h := throwawayNetNS(t)
	log := terminationLog(t)
	cmd, out := start(t, bin, name, "--interfaces", "net1", "--timeout", "20s", "--termination-log", log)
	net1Later(t, cmd, h, out)
	if !strings.Contains(out.String(), "[net1] up after") {
		t.Fatalf("output %q does not say net1 is up", out)
	}
	checkUsage(t, log, "net1 up (waited=")
}

// TestRootPodnetWaitTimesOutNamingMissing: with net1 up and net2 absent,
// the binary exits 1 at the timeout and names net2 only.
func TestRootPodnetWaitTimesOutNamingMissing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("TestRootPodnetWaitTimesOutNamingMissing creates network namespaces: run it as root")
	}
	bin := build(t)
	name, h := throwawayNetNS(t)
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "net1"}, PeerName: "net1p"}
	if err := h.LinkAdd(v); err != nil {
		t.Fatalf("add net1: %v", err)
	}
	if err := h.LinkSetUp(v); err != nil {
		t.Fatalf("up net1: %v", err)
	}
	log := terminationLog(t)
	cmd, out := start(t, bin, name, "--interfaces", "net1,net2", "--timeout", "500ms", "--termination-log", log)
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("podnet-wait: %v, want exit status 1\n%s", err, out)
	}
	if msg := out.String(); !strings.Contains(msg, "net2 (absent)") || strings.Contains(msg, "net1 (") {
		t.Fatalf("output %q: want net2 named absent and net1 not named", msg)
	}
	checkUsage(t, log, "podnet interfaces not ready after 500ms in this pod's network namespace: net2 (absent)")
}

// runHook runs the binary as a runtime runs a createRuntime hook: in the
// machine's namespaces, root, the container's state on stdin. The
// "container" is a sleep in the throwaway namespace nsName; as a runtime
// does, the hook starts only once the container is in its namespaces.
func runHook(t *testing.T, bin, nsName string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	ctr := exec.Command("ip", "netns", "exec", nsName, "sleep", "60")
	launch(t, ctr)
	inNetNS(t, ctr.Process.Pid, nsName)
	cmd := exec.Command(bin, append([]string{wait.HookCommand}, args...)...)
	// An OCI state as runc writes it; an annotation named pid (a string)
	// comes first, and must not be taken for the process.
	cmd.Stdin = strings.NewReader(`{"ociVersion":"1.0.2","annotations":{"pid":"1"},"id":"c1","status":"creating","pid":` +
		strconv.Itoa(ctr.Process.Pid) + `,"bundle":"/b"}`)
	return cmd, launch(t, cmd)
}

// inNetNS waits until process pid has entered the named network
// namespace (ip netns exec enters it after the process started).
func inNetNS(t *testing.T, pid int, nsName string) {
	t.Helper()
	var want, got syscall.Stat_t
	if err := syscall.Stat(filepath.Join("/run/netns", nsName), &want); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		err := syscall.Stat(filepath.Join("/proc", strconv.Itoa(pid), "ns", "net"), &got)
		if err == nil && got.Ino == want.Ino && got.Dev == want.Dev {
			return
		}
		if i == 500 {
			t.Fatalf("process %d not in network namespace %s after 5s (%v)", pid, nsName, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRootPodnetWaitHook runs the stripped binary as the createRuntime
// hook the agent's NRI plugin adds: from the machine's namespaces it
// waits in the container's network namespace (named by the pid in its
// state) until net1 is there and up, and exits 0 only then; with net2
// absent it exits 1 at its timeout naming net2, so the runtime fails the
// container rather than start it without its networks.
func TestRootPodnetWaitHook(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("TestRootPodnetWaitHook creates network namespaces: run it as root")
	}
	bin := build(t)
	name, h := throwawayNetNS(t)
	cmd, out := runHook(t, bin, name, "--interfaces", "net1", "--timeout", "20s")
	net1Later(t, cmd, h, out)

	cmd, out = runHook(t, bin, name, "--interfaces", "net1,net2", "--timeout", "500ms")
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("the hook: %v, want exit status 1\n%s", err, out)
	}
	if msg := out.String(); !strings.Contains(msg, "net2 (absent)") || strings.Contains(msg, "net1 (") {
		t.Fatalf("output %q: want net2 named absent and net1 not named", msg)
	}
}

// net1Later adds net1 to the namespace of h after the command started,
// sees the command still waiting while net1 is down, brings net1 up and
// waits for the command to exit 0.
func net1Later(t *testing.T, cmd *exec.Cmd, h *netlink.Handle, out *bytes.Buffer) {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	time.Sleep(300 * time.Millisecond)
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "net1"}, PeerName: "net1p"}
	if err := h.LinkAdd(v); err != nil {
		t.Fatalf("add net1: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-exited:
		t.Fatalf("%s exited (%v) while net1 was down:\n%s", cmd.Path, err, out)
	default:
	}
	if err := h.LinkSetUp(v); err != nil {
		t.Fatalf("up net1: %v", err)
	}
	if err := <-exited; err != nil {
		t.Fatalf("%s: %v\n%s", cmd.Path, err, out)
	}
}
