package agent

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"podnet.io/podnet/hack/image"
	"podnet.io/podnet/test/critest"
	"podnet.io/podnet/test/testenv"
)

// TestMain runs the tests, then stops what they shared: the API server,
// containerd and the built commands.
func TestMain(m *testing.M) {
	code := testenv.RunShared(m)
	if err := critest.StopShared(); err != nil {
		fmt.Fprintf(os.Stderr, "stop the shared runtime: %v\n", err)
		code = 1
	}
	if binaries.dir != "" {
		if err := os.RemoveAll(binaries.dir); err != nil {
			fmt.Fprintf(os.Stderr, "remove the built commands: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// binaries are the commands the tests run, built once per test binary:
// Go's build cache spares the compiling, not the linking, about 4.5 s for
// the agent.
var binaries struct {
	sync.Mutex
	dir   string
	built map[string]string // path by package
}

// binary builds the command of pkg (image.AgentCommand and the like) the
// first time a test asks for it and returns its path, which no test may
// change.
func binary(t testing.TB, pkg string) string {
	t.Helper()
	binaries.Lock()
	defer binaries.Unlock()
	if p, ok := binaries.built[pkg]; ok {
		return p
	}
	if binaries.dir == "" {
		dir, err := os.MkdirTemp("", "pntest-agent-bin-")
		if err != nil {
			t.Fatal(err)
		}
		binaries.dir, binaries.built = dir, map[string]string{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := filepath.Join(binaries.dir, path.Base(pkg))
	if err := image.BuildGoBinary(ctx, testenv.RepoRoot(t), pkg, out); err != nil {
		t.Fatal(err)
	}
	binaries.built[pkg] = out
	return out
}
