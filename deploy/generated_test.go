// Package deploy holds podnet's manifests. Its only Go code is this test,
// which fails when a generated manifest no longer matches the Go markers.
package deploy

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedManifestsAreCurrent regenerates every controller-gen output
// into a scratch folder and compares it byte for byte with the committed
// files: a changed API type or RBAC marker without `make manifests` fails.
func TestGeneratedManifestsAreCurrent(t *testing.T) {
	scratch := t.TempDir()
	cmd := exec.Command("hack/manifests.sh")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "MANIFESTS_OUT="+scratch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/manifests.sh: %v\n%s", err, out)
	}
	n := 0
	err := filepath.WalkDir(scratch, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(scratch, path)
		want, _ := os.ReadFile(path)
		got, err := os.ReadFile(rel)
		if err != nil {
			t.Errorf("%s is generated but not committed: run `make manifests`", rel)
			return nil
		}
		if !bytes.Equal(got, want) {
			t.Errorf("deploy/%s is stale: run `make manifests`", rel)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("hack/manifests.sh generated nothing")
	}
}
