package release

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestBuildOnceForTwoCallers builds a throwaway release whose make image
// counts its runs: two Builds at once and a third after them run it once,
// and all three find its result.
func TestBuildOnceForTwoCallers(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	env := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
	runs := filepath.Join(t.TempDir(), "runs")
	makefile := "image:\n\tsleep 0.2; echo built >> " + runs + "; echo image > image.tar\n"
	for _, step := range []func() error{
		func() error { return git(ctx, repo, env, "init", "-q") },
		func() error { return os.WriteFile(filepath.Join(repo, "Makefile"), []byte(makefile), 0o644) },
		func() error { return git(ctx, repo, env, "add", "Makefile") },
		func() error { return git(ctx, repo, env, "commit", "-q", "-m", "release") },
		func() error { return os.MkdirAll(filepath.Join(repo, "_output", "k8s"), 0o755) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	r := Release{Version: "0.1.0", Commit: strings.TrimSpace(gitOutput(t, repo, "rev-parse", "HEAD"))}
	var wg sync.WaitGroup
	dirs, errs := make([]string, 3), make([]error, 3)
	for i := range 2 {
		wg.Go(func() { dirs[i], errs[i] = Build(ctx, repo, r, io.Discard) })
	}
	wg.Wait()
	dirs[2], errs[2] = Build(ctx, repo, r, io.Discard)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Build %d: %v", i, err)
		}
		if dirs[i] != Dir(repo, r) {
			t.Errorf("Build %d built into %s, want %s", i, dirs[i], Dir(repo, r))
		}
	}
	if b, err := os.ReadFile(filepath.Join(Dir(repo, r), "image.tar")); err != nil || string(b) != "image\n" {
		t.Fatalf("the release's image: %q, %v", b, err)
	}
	if b, _ := os.ReadFile(runs); string(b) != "built\n" {
		t.Fatalf("make image ran %d times, want once", strings.Count(string(b), "built"))
	}
}
