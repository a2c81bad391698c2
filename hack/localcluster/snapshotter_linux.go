package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ChooseSnapshotter picks the snapshotter for a containerd whose folders
// live under dir: overlayfs when an overlay mount works there, native
// otherwise, unless SnapshotterEnv forces one. It returns why, for the log.
// The containerd configuration and every image import into it must use
// the answer: an image unpacked by another snapshotter is invisible to
// the CRI.
func ChooseSnapshotter(dir string) (name, note string, err error) {
	return chooseSnapshotter(os.Getenv(SnapshotterEnv), func() error { return probeOverlay(dir) })
}

// probeOverlay mounts a one-layer overlay in a throwaway folder under dir
// and unmounts it: the same mount containerd's overlayfs snapshotter makes
// for a container's rootfs, on the same filesystem.
func probeOverlay(dir string) (err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %q: %w", dir, err)
	}
	tmp, err := os.MkdirTemp(dir, "overlay-probe-")
	if err != nil {
		return fmt.Errorf("create overlay probe folder under %q: %w", dir, err)
	}
	defer func() {
		if rerr := os.RemoveAll(tmp); rerr != nil {
			err = errors.Join(err, fmt.Errorf("remove overlay probe %q: %w", tmp, rerr))
		}
	}()
	names := []string{"lower", "upper", "work", "merged"}
	for _, n := range names {
		if err := os.Mkdir(filepath.Join(tmp, n), 0o755); err != nil {
			return fmt.Errorf("create overlay probe folder: %w", err)
		}
	}
	merged := filepath.Join(tmp, "merged")
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", filepath.Join(tmp, "lower"), filepath.Join(tmp, "upper"), filepath.Join(tmp, "work"))
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		return fmt.Errorf("mount overlay on %q: %w", merged, err)
	}
	if err := unix.Unmount(merged, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("unmount overlay probe %q: %w", merged, err)
	}
	return nil
}
