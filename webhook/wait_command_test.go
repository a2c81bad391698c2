package webhook

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/hack/image"
	"podnet.io/podnet/test/testenv"
)

// TestWaitContainerRunsPodnetWait runs the injected container's command
// line against the real podnet-wait binary, built as the wait image holds
// it, so the flags written here and the ones it parses cannot drift
// apart; and the same flags against `podnet-agent wait`, which must keep
// accepting them. It only reads links of the test's own network
// namespace.
func TestWaitContainerRunsPodnetWait(t *testing.T) {
	wait := filepath.Join(t.TempDir(), "podnet-wait")
	if err := image.BuildGoBinary(context.Background(), testenv.RepoRoot(t), image.WaitCommand, wait); err != nil {
		t.Fatal(err)
	}
	agent := BuildCommand(t, "./cmd/podnet-agent")
	for _, c := range []struct {
		name string
		argv func(corev1.Container) []string
	}{
		{"podnet-wait", func(c corev1.Container) []string {
			if len(c.Command) != 1 || c.Command[0] != WaitBinary || filepath.Base(c.Command[0]) != filepath.Base(wait) {
				t.Fatalf("command %q, want [%s]", c.Command, WaitBinary)
			}
			return append([]string{wait}, c.Args...)
		}},
		{"podnet-agent wait", func(c corev1.Container) []string {
			return append([]string{agent, "wait"}, c.Args...)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := func(ifaces []string, timeout time.Duration) (string, error) {
				argv := c.argv(waitContainer(WaitOptions{Image: DefaultWaitImage, Timeout: timeout}, &corev1.Pod{}, ifaces))
				var out bytes.Buffer
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Stdout, cmd.Stderr = &out, &out
				err := cmd.Run()
				return out.String(), err
			}
			if out, err := run([]string{"lo"}, 5*time.Second); err != nil {
				t.Fatalf("wait for lo: %v\n%s", err, out)
			}
			out, err := run([]string{"lo", "pnnope0"}, 300*time.Millisecond)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, "pnnope0 (absent)") {
				t.Fatalf("wait for a missing interface: err=%v, want exit status 1 naming pnnope0\n%s", err, out)
			}
		})
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
