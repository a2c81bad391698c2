//go:build bench

package agent

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"podnet.io/podnet/hack/image"
	"podnet.io/podnet/test/bench"
	"podnet.io/podnet/test/testenv"
)

// clientsetPackage is client-go's typed clientset of every API group. The
// agent does not call it, but controller-runtime's client (for its scheme)
// and the DRA kubelet plugin import it, and its packages' start-up
// registers every built-in type.
const clientsetPackage = "k8s.io/client-go/kubernetes"

// importFloor is the resident memory (ProcStatus fields, KiB) of a program
// that imports packages and does nothing else: built as the agent is,
// started with environ, measured after the same 2 s settling as the
// agent's idle figure. What the packages' start-up and the Go runtime
// cost is a floor that no work of the agent's own can go under while it
// imports them.
func importFloor(t *testing.T, environ, packages []string) map[string]int64 {
	t.Helper()
	root := testenv.RepoRoot(t)
	if err := os.MkdirAll(filepath.Join(root, "_output"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Inside the module, so that it may import the agent's packages; the
	// leading underscore keeps it out of ./... patterns.
	dir, err := os.MkdirTemp(filepath.Join(root, "_output"), "_floor-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var src strings.Builder
	src.WriteString("package main\n\nimport (\n\t\"fmt\"\n\t\"time\"\n")
	for _, p := range packages {
		if p != "fmt" && p != "time" {
			fmt.Fprintf(&src, "\t_ %q\n", p)
		}
	}
	src.WriteString(")\n\nfunc main() {\n\tfmt.Println(\"ready\")\n\ttime.Sleep(time.Hour)\n}\n")
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "floor")
	if err := image.BuildGoBinaryAs(ctx, root, "./"+filepath.Join("_output", filepath.Base(dir)), image.AgentCommand, bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), environ...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := testenv.StartProcess(t, cmd, time.Second, nil)
	defer p.Stop(t, syscall.SIGKILL, time.Second)
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("floor program: %q, %v", line, err)
	}
	time.Sleep(2 * time.Second)
	st, err := bench.ProcStatus(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// agentImports are the packages podnet-agent's main package imports.
func agentImports(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, image.AgentCommand)
	cmd.Dir = testenv.RepoRoot(t)
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", image.AgentCommand, err)
	}
	return strings.Fields(string(b))
}

// printFloors prints the resident memory of the agent's two floors (its
// imports, and client-go's clientset alone) and returns the first's in
// MiB.
func printFloors(t *testing.T, environ []string) float64 {
	t.Helper()
	imports := printFloor(t, "imports", environ, agentImports(t))
	printFloor(t, "clientset", environ, []string{clientsetPackage})
	return imports
}

// printFloor prints one floor's resident memory, anonymous and file, and
// returns the whole in MiB.
func printFloor(t *testing.T, name string, environ, packages []string) float64 {
	t.Helper()
	mib := func(kb int64) float64 { return float64(kb) / 1024 }
	st := importFloor(t, environ, packages)
	fmt.Printf("BENCH agent_rss_floor_%s %.1f MiB\n", name, mib(st["VmRSS"]))
	fmt.Printf("BENCH agent_rss_anon_floor_%s %.1f MiB\n", name, mib(st["RssAnon"]))
	fmt.Printf("BENCH agent_rss_file_floor_%s %.1f MiB\n", name, mib(st["RssFile"]))
	return mib(st["VmRSS"])
}
