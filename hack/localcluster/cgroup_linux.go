package localcluster

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// cgroupRootOf names the cgroup each node's kubelet puts its QoS tree
// (kubepods, burstable, besteffort) under. Every node of every local
// cluster shares the machine's cgroup hierarchies, so each needs its own:
// two kubelets managing one kubepods would each remove the other's pods.
func cgroupRootOf(nodeName string) string { return "/podnet-" + nodeName }

// cgroupMounts lists the mount points of the cgroup hierarchies (v1 and
// v2) in a mountinfo listing.
func cgroupMounts(mountinfo io.Reader) ([]string, error) {
	all, err := mounts(mountinfo)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range all {
		if m.FSType == "cgroup" || m.FSType == "cgroup2" {
			out = append(out, m.Point)
		}
	}
	return out, nil
}

func machineCgroupMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	return cgroupMounts(f)
}

// makeCgroupRoot creates root in every cgroup hierarchy, as the kubelet
// refuses a cgroupRoot that does not exist. A new cpuset cgroup starts
// with no CPUs and no memory nodes, and no process can join it (nor a
// child created by the kubelet) until they are set, so it copies its
// parent's.
func makeCgroupRoot(root string) error {
	mounts, err := machineCgroupMounts()
	if err != nil {
		return err
	}
	for _, m := range mounts {
		dir := filepath.Join(m, root)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create cgroup %q: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			b, err := os.ReadFile(filepath.Join(m, f))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return fmt.Errorf("read %q: %w", filepath.Join(m, f), err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				return fmt.Errorf("write %q: %w", filepath.Join(dir, f), err)
			}
		}
	}
	return nil
}

// removeCgroupRoot removes root and the cgroups the kubelet left under it
// in every hierarchy, deepest first: a cgroup is removed with rmdir, which
// fails while it has children or processes. Down calls it after every
// process of the node is stopped. A root already gone is fine.
func removeCgroupRoot(root string) []error {
	mounts, err := machineCgroupMounts()
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, m := range mounts {
		top := filepath.Join(m, root)
		var dirs []string
		err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("list cgroup %q: %w", top, err))
			continue
		}
		for _, d := range slices.Backward(dirs) {
			if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove cgroup %q: %w", d, err))
			}
		}
	}
	return errs
}
