package webhook

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/test/testenv"
)

// TestWaitContainerRunsTheAgentsWaitCommand runs the injected container's
// command line against the real podnet-agent binary, so the flags written
// here and the ones its wait subcommand parses cannot drift apart. It only
// reads links of the test's own network namespace.
func TestWaitContainerRunsTheAgentsWaitCommand(t *testing.T) {
	bin := BuildCommand(t, "./agent/cmd/podnet-agent")
	run := func(ifaces []string, timeout time.Duration) (string, error) {
		c := waitContainer(WaitOptions{Image: DefaultWaitImage, Timeout: timeout}, &corev1.Pod{}, ifaces)
		if c.Command[0] != AgentBinary {
			t.Fatalf("command %q", c.Command)
		}
		var out bytes.Buffer
		cmd := exec.Command(bin, c.Args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	if out, err := run([]string{"lo"}, 5*time.Second); err != nil {
		t.Fatalf("wait for lo: %v\n%s", err, out)
	}
	out, err := run([]string{"lo", "pnnope0"}, 300*time.Millisecond)
	if err == nil || !strings.Contains(out, "pnnope0") {
		t.Fatalf("wait for a missing interface: err=%v\n%s", err, out)
	}
}

// BuildCommand builds one of podnet's commands (a package path relative to
// the repository root) as `make build` does, into a temporary folder, and
// returns the binary's path. It is exported for package webhook_test.
func BuildCommand(t testing.TB, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	build := exec.Command("go", "build", "-trimpath", "-o", bin, pkg)
	build.Dir = testenv.RepoRoot(t)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	return bin
}
