package versions

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"podnet.io/podnet/pkg/version"
	"podnet.io/podnet/test/testenv"
)

// commands are podnet's binaries and how each is asked for its release.
var commands = map[string][]string{
	"./cmd/podnet-agent":      {"--version"},
	"./cmd/podnet-cni":        {"--version"},
	"./cmd/podnet-wait":       {"--version"},
	"./cmd/podnet-webhook":    {"--version"},
	"./cmd/podnet-controller": {"--version"},
	"./cmd/kubectl-podnet":    {"version"},
}

// TestEveryBinaryReportsTheRelease builds each binary and runs it with
// --version (kubectl-podnet: version): each prints its name and the
// release, and exits 0 without a cluster, a node or a flag file.
func TestEveryBinaryReportsTheRelease(t *testing.T) {
	root := testenv.RepoRoot(t)
	dirs, err := os.ReadDir(filepath.Join(root, "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		// podnet-keygen makes development keys; it ships in no image.
		if _, ok := commands["./cmd/"+d.Name()]; !ok && d.Name() != "podnet-keygen" {
			t.Errorf("cmd/%s is not in commands: every shipped binary reports its release", d.Name())
		}
	}
	bin := t.TempDir()
	args := []string{"build", "-trimpath", "-o", bin + "/"}
	for pkg := range commands {
		args = append(args, pkg)
	}
	build := exec.Command("go", args...)
	build.Dir = root
	build.Env = append(build.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for pkg, flags := range commands {
		name := filepath.Base(pkg)
		out, err := exec.Command(filepath.Join(bin, name), flags...).CombinedOutput()
		if err != nil {
			t.Errorf("%s %s: %v\n%s", name, strings.Join(flags, " "), err, out)
			continue
		}
		if want := name + " " + version.Version; !strings.HasPrefix(strings.TrimSpace(string(out)), want) {
			t.Errorf("%s %s printed %q, want it to start with %q", name, strings.Join(flags, " "), out, want)
		}
	}
}
