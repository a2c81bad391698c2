package release

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// builtMark is the file Build writes into a release's folder once its
// `make image` succeeded.
const builtMark = ".podnet-release-built"

// Dir is the folder Build builds r into under the repository at root,
// kept between runs: named by r's commit, whose tree never changes.
func Dir(root string, r Release) string {
	return filepath.Join(root, "_output", "release", r.Version+"-"+r.Commit)
}

// Build unpacks r's tree into Dir and runs that tree's own `make image`
// there (its binaries and images, with its manifests' tag; its kubectl is
// root's, by a link to root's _output/k8s), unless an earlier Build did:
// then it returns at once. Two Builds of one release (make test builds it
// beside the suites, and the upgrade suite needs it) take turns on a lock
// file, so the second waits for the first and finds its result.
func Build(ctx context.Context, root string, r Release, log io.Writer) (string, error) {
	dir := Dir(root, r)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("release %s: %w", r.Version, err)
	}
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("release %s: lock: %w", r.Version, err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return "", fmt.Errorf("release %s: lock %s: %w", r.Version, lock.Name(), err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN) //nolint:errcheck // closing the file releases it too
	if _, err := os.Stat(filepath.Join(dir, builtMark)); err == nil {
		fmt.Fprintf(log, "release %s (commit %s) already built in %s\n", r.Version, r.Commit[:12], dir)
		return dir, nil
	}
	// A build that stopped half way leaves a tree that is not the commit's.
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("release %s: remove an unfinished build: %w", r.Version, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "_output"), 0o755); err != nil {
		return "", fmt.Errorf("release %s: %w", r.Version, err)
	}
	if err := Unpack(ctx, root, r, dir); err != nil {
		return "", err
	}
	k8s, err := filepath.EvalSymlinks(filepath.Join(root, "_output", "k8s"))
	if err != nil {
		return "", fmt.Errorf("release %s: the working tree's Kubernetes commands: %w", r.Version, err)
	}
	if err := os.Symlink(k8s, filepath.Join(dir, "_output", "k8s")); err != nil {
		return "", fmt.Errorf("release %s: %w", r.Version, err)
	}
	start := time.Now()
	cmd := exec.CommandContext(ctx, "make", "-C", dir, "image")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build release %s (commit %s) with its make image: %w", r.Version, r.Commit, err)
	}
	if err := os.WriteFile(filepath.Join(dir, builtMark), nil, 0o644); err != nil {
		return "", errors.Join(fmt.Errorf("release %s: mark it built", r.Version), err)
	}
	fmt.Fprintf(log, "release %s (commit %s) built with its own make image in %s\n", r.Version, r.Commit[:12], time.Since(start).Round(time.Second))
	return dir, nil
}
