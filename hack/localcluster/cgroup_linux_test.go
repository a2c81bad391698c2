package localcluster

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCgroupMounts(t *testing.T) {
	const mountinfo = `22 1 0:21 / / rw,relatime - overlay overlay rw
30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu
33 30 0:30 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
41 22 0:38 / /mnt/odd\040name rw - cgroup cgroup rw,pids
42 22 0:39 / /mnt/cgroup-like rw - ext4 /dev/sda1 rw
`
	got, err := cgroupMounts(strings.NewReader(mountinfo))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuset", "/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified", "/mnt/odd name"}
	if !slices.Equal(got, want) {
		t.Errorf("cgroupMounts = %q, want %q", got, want)
	}
}

// TestRootCgroupRoot creates a cgroup root in the machine's hierarchies,
// twice (a second Up must be fine), checks that a child the kubelet would
// make can hold CPUs, then removes the whole tree as Down does, twice.
func TestRootCgroupRoot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("needs root: creates cgroups")
	}
	mounts, err := machineCgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) == 0 {
		t.Fatal("no cgroup hierarchy mounted")
	}
	root := cgroupRootOf("cgtest-" + strings.ToLower(rand.Text()[:6]))
	t.Cleanup(func() {
		for _, err := range removeCgroupRoot(root) {
			t.Error(err)
		}
	})
	for range 2 {
		if err := makeCgroupRoot(root); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range mounts {
		if _, err := os.Stat(filepath.Join(m, root)); err != nil {
			t.Errorf("hierarchy %q: %v", m, err)
		}
		child := filepath.Join(m, root, "kubepods", "besteffort")
		if err := os.MkdirAll(child, 0o755); err != nil {
			t.Fatal(err)
		}
		parent, err := os.ReadFile(filepath.Join(m, "cpuset.cpus"))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(m, root, "cpuset.cpus"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, parent) || len(bytes.TrimSpace(got)) == 0 {
			t.Errorf("%s/cpuset.cpus = %q, want the parent's %q", root, got, parent)
		}
	}
	for range 2 {
		for _, err := range removeCgroupRoot(root) {
			t.Error(err)
		}
	}
	for _, m := range mounts {
		if _, err := os.Stat(filepath.Join(m, root)); !os.IsNotExist(err) {
			t.Errorf("hierarchy %q: %s still there (%v)", m, root, err)
		}
	}
}
