package release

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnpack unpacks a commit of a throwaway repository, and refuses a
// commit the history lacks with the way to fetch it.
func TestUnpack(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	env := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
	if err := git(ctx, repo, env, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "VERSION"), []byte("0.1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := git(ctx, repo, env, "add", "VERSION"); err != nil {
		t.Fatal(err)
	}
	if err := git(ctx, repo, env, "commit", "-q", "-m", "release"); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	head := strings.TrimSpace(gitOutput(t, repo, "rev-parse", "HEAD"))
	if err := Unpack(ctx, repo, Release{Version: "0.1.0", Commit: head}, out); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "VERSION")); err != nil || string(b) != "0.1.0\n" {
		t.Fatalf("unpacked VERSION = %q, %v", b, err)
	}
	missing := strings.Repeat("d", 40)
	err := Unpack(ctx, repo, Release{Version: "0.0.1", Commit: missing}, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "git fetch --unshallow") || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing commit: err = %v, want how to fetch %s", err, missing)
	}
}

func gitOutput(t *testing.T, repo string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	b, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
