package release

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Unpack writes the tree of r's commit into dir (which must exist and be
// empty) with `git archive`, reading the repository at root. A commit
// missing from the clone's history, as in a shallow clone, is an error
// that says how to fetch it.
func Unpack(ctx context.Context, root string, r Release, dir string) error {
	if err := git(ctx, root, nil, "cat-file", "-e", r.Commit+"^{commit}"); err != nil {
		return fmt.Errorf("release %s: commit %s (CHANGELOG.md) is not in the history of %s (a shallow clone?): "+
			"fetch it with `git fetch --unshallow` or `git fetch origin %s`: %w", r.Version, r.Commit, root, r.Commit, err)
	}
	archive := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", r.Commit)
	var stderr bytes.Buffer
	archive.Stderr = &stderr
	tarball, err := archive.Output()
	if err != nil {
		return fmt.Errorf("release %s: git archive %s: %w: %s", r.Version, r.Commit, err, strings.TrimSpace(stderr.String()))
	}
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", dir)
	untar.Stdin = bytes.NewReader(tarball)
	if out, err := untar.CombinedOutput(); err != nil {
		return fmt.Errorf("release %s: unpack into %s: %w: %s", r.Version, dir, err, out)
	}
	return nil
}

func git(ctx context.Context, root string, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", root}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
