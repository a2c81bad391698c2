package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRootProbeOverlay probes in a throwaway folder on the machine's
// filesystem (ext4 here, where overlay mounts work): the probe must say
// overlayfs works and leave neither a mount nor a file behind.
func TestRootProbeOverlay(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("needs root: mounts an overlay")
	}
	dir := filepath.Join(t.TempDir(), "containerd")
	t.Cleanup(func() {
		if err := UnmountUnder(dir); err != nil {
			t.Error(err)
		}
	})
	if err := probeOverlay(dir); err != nil {
		t.Fatalf("overlay probe under %s: %v", dir, err)
	}
	if left, err := mountsUnder(dir); err != nil || len(left) > 0 {
		t.Errorf("mounts left by the probe: %v %v", left, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		t.Errorf("probe left %d entries in %s: %v", len(entries), dir, entries)
	}
}

// TestRootUnmountUnderOverlay stacks what a killed containerd leaves in a
// cluster folder — a tmpfs, an overlay rootfs on it with a bind mount
// inside it, a shm tmpfs, a path with a space — and checks that
// UnmountUnder leaves nothing mounted, so the folder can be removed
// without deleting through a mount.
func TestRootUnmountUnderOverlay(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("needs root: mounts overlays")
	}
	dir := t.TempDir()
	t.Cleanup(func() { _ = unmountUnder(dir) })
	state := filepath.Join(dir, "state")
	mustMount(t, "tmpfs", state, "tmpfs", "size=16m")
	snap := filepath.Join(state, "snapshots")
	for _, d := range []string{"lower", "upper", "work"} {
		mkdir(t, filepath.Join(snap, d))
	}
	if err := os.WriteFile(filepath.Join(snap, "lower", "image-file"), []byte("layer"), 0o644); err != nil {
		t.Fatal(err)
	}
	rootfs := filepath.Join(state, "task", "k8s.io", "ctr one", "rootfs")
	mustMount(t, "overlay", rootfs, "overlay", fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s",
		filepath.Join(snap, "lower"), filepath.Join(snap, "upper"), filepath.Join(snap, "work")))
	if _, err := os.Stat(filepath.Join(rootfs, "image-file")); err != nil {
		t.Fatalf("overlay rootfs does not show its layer: %v", err)
	}
	src := filepath.Join(dir, "volume")
	mkdir(t, src)
	bind := filepath.Join(rootfs, "etc", "hosts-dir")
	mkdir(t, bind)
	if err := unix.Mount(src, bind, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s on %s: %v", src, bind, err)
	}
	mustMount(t, "shm", filepath.Join(state, "sandboxes", "abc", "shm"), "tmpfs", "size=64k")

	before, err := readMountsUnder(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 4 {
		t.Fatalf("set up %d mounts under %s, want 4: %v", len(before), dir, before)
	}
	if err := UnmountUnder(dir); err != nil {
		t.Fatal(err)
	}
	if left, err := mountsUnder(dir); err != nil || len(left) > 0 {
		t.Fatalf("mounts left under %s: %v %v", dir, left, err)
	}
	// The layer lives in the tmpfs, now detached: nothing of it is left
	// to remove through a mount.
	if _, err := os.Stat(state); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(state); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(src); err != nil {
		t.Errorf("the bind mount's source outside the rootfs is gone: %v", err)
	}
	if err := UnmountUnder(dir); err != nil {
		t.Errorf("second UnmountUnder with nothing mounted: %v", err)
	}
}

func mkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustMount(t *testing.T, source, target, fstype, data string) {
	t.Helper()
	mkdir(t, target)
	if err := unix.Mount(source, target, fstype, 0, data); err != nil {
		t.Fatalf("mount %s on %s: %v", fstype, target, err)
	}
}
