package localcluster

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Down stops the cluster and removes its mounts, namespaces and
// interfaces; see the package function Down.
func (c *Cluster) Down(ctx context.Context) error { return Down(ctx, c.Name, c.root) }

// Down tears down the cluster called name under root, whether it is
// healthy, half started or already gone: it stops every recorded process
// (SIGTERM, then SIGKILL), the pods' containers and shims, unmounts
// everything under the cluster folder and the pod netns of this cluster,
// removes the nodes' cgroup roots, deletes the cluster's netns (and with
// them every interface in them) and removes the folder except its logs.
// Running it twice is fine.
func Down(ctx context.Context, name, root string) error {
	if err := validateName(name); err != nil {
		return err
	}
	dir := ClusterDir(root, name)
	recs, err := readRecords(dir)
	if err != nil {
		return fmt.Errorf("cluster %q: %w", name, err)
	}
	var l *layout
	var kind runtimeKind
	if st, err := readState(dir); err == nil {
		pl := planLayout(name, st.Index, st.Nodes)
		l = &pl
		_, kind, _ = kindOf(st.Runtime)
	}
	var errs []error
	// kubelets first, so nothing restarts the containers stopped below.
	errs = append(errs, stopNamed(recs, "kubelet-", "kube-proxy-")...)
	nodeDirs, _ := filepath.Glob(filepath.Join(dir, name+"-n[0-9]*"))
	for _, nd := range nodeDirs {
		ids, cerrs := removeContainers(ctx, filepath.Join(nd, "runc"))
		errs = append(errs, cerrs...)
		// containerd's CNI library caches the loopback result of every
		// sandbox machine-wide; the sandbox's id names the file.
		for _, id := range ids {
			errs = append(errs, removeGlob(filepath.Join("/var/lib/cni/results", "cni-loopback-"+id+"-*")))
		}
	}
	errs = append(errs, stopNamed(recs, "runtime-")...)
	for _, nd := range nodeDirs {
		for _, s := range shimsOf(filepath.Join(nd, NodeCRISocket)) {
			errs = append(errs, stopProcess(s.procRecord, 2*time.Second))
			// A killed shim leaves its socket behind.
			if err := os.Remove(s.socket); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove shim socket %q: %w", s.socket, err))
			}
		}
		for _, c := range conmonsOf(filepath.Join(nd, nodeRuntimeDir)) {
			errs = append(errs, stopProcess(c, 2*time.Second))
		}
		runcRoot := filepath.Join(nd, "runc")
		for _, r := range runcsOf(runcRoot) {
			errs = append(errs, stopProcess(r, 0))
		}
		// What those runcs created after the first pass.
		_, cerrs := removeContainers(ctx, runcRoot)
		errs = append(errs, cerrs...)
	}
	// The API server shuts down gracefully only while etcd still answers.
	errs = append(errs, stopNamed(recs, "kube-")...)
	errs = append(errs, stopNamed(recs, "")...)
	if kind.pins != nil {
		for _, nd := range nodeDirs {
			p := RuntimePaths{Dir: filepath.Join(nd, nodeRuntimeDir), StorageDir: StorageDirOf(root, name, filepath.Base(nd))}
			errs = append(errs, removePins(kind.pins(p))...)
		}
	}
	if l != nil {
		errs = append(errs, removePodNetNS(l.ClusterCIDR)...)
		for _, n := range l.Nodes {
			errs = append(errs, removeCgroupRoot(cgroupRootOf(n.Name))...)
		}
	}
	errs = append(errs, unmountUnder(dir)...)
	if l != nil {
		// Explicitly, not only with the netns: a process Down could not
		// stop keeps its node's netns alive, and the nodes must not stay
		// joined by a data NIC then.
		errs = append(errs, removeDataLink(l.Nodes[0]))
	}
	for _, ns := range []string{"pn-" + name + "-n2", "pn-" + name} {
		errs = append(errs, deleteNetNS(ns))
	}
	if l != nil {
		for _, n := range l.Nodes {
			errs = append(errs, removeGlob(filepath.Join("/var/lib/cni/results", n.CNIName+"-*")))
		}
	}
	errs = append(errs, removeContainerLogLinks(dir))
	// The nodes' runtime storage outside the cluster folder (vfs: files,
	// and nothing mounted once the runtime is gone).
	storage := storageDirOf(root, name)
	errs = append(errs, unmountUnder(storage)...)
	if left, err := mountsUnder(storage); err != nil || len(left) > 0 {
		errs = append(errs, fmt.Errorf("keeping %q: still mounted: %v %v", storage, left, err))
	} else if err := os.RemoveAll(storage); err != nil {
		errs = append(errs, fmt.Errorf("remove runtime storage: %w", err))
	}
	// Emptying the folder while something is still mounted in it would
	// delete through the mount, so it waits for a clean unmount.
	if left, err := mountsUnder(dir); err != nil || len(left) > 0 {
		errs = append(errs, fmt.Errorf("keeping %q: still mounted: %v %v", dir, left, err))
	} else {
		errs = append(errs, removeAllBut(dir, "logs"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tear down cluster %q: %w", name, err)
	}
	return nil
}

// stopNamed stops the recorded processes whose name starts with one of
// the prefixes ("" matches all), in parallel.
func stopNamed(recs []procRecord, prefixes ...string) []error {
	errc := make(chan error)
	n := 0
	for _, r := range recs {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(r.Name, p) }) {
			continue
		}
		n++
		go func() { errc <- stopProcess(r, 10*time.Second) }()
	}
	var errs []error
	for range n {
		errs = append(errs, <-errc)
	}
	return errs
}

// removeContainers force-deletes every container in a node's runc root
// (one folder per containerd namespace). Killing a shim alone would leave
// its containers running, reparented to init.
func removeContainers(ctx context.Context, runcRoot string) (ids []string, errs []error) {
	roots, _ := filepath.Glob(filepath.Join(runcRoot, "*"))
	for _, r := range roots {
		out, err := listContainers(ctx, r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, id := range strings.Fields(string(out)) {
			ids = append(ids, id)
			if b, err := exec.CommandContext(ctx, "runc", "--root", r, "delete", "--force", id).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("delete container %q in %q: %w: %s", id, r, err, strings.TrimSpace(string(b))))
			}
		}
	}
	return ids, errs
}

// listContainers lists the containers in one runc root. runc fails the
// whole listing when a container exits between two of its reads (its
// state, then its process), which happens while containerd is stopping
// pods, so a failure is retried a few times before it counts.
func listContainers(ctx context.Context, root string) ([]byte, error) {
	var err error
	for attempt := range 5 {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
		}
		var stderr strings.Builder
		cmd := exec.CommandContext(ctx, "runc", "--root", root, "list", "-q")
		cmd.Stderr = &stderr
		out, e := cmd.Output()
		if e == nil {
			return out, nil
		}
		err = fmt.Errorf("list containers in %q: %w: %s", root, e, strings.TrimSpace(stderr.String()))
	}
	return nil, err
}

type shim struct {
	procRecord
	socket string
}

// shimsOf finds the containerd shims serving one containerd instance:
// their command line names that instance's socket. containerd starts them,
// so they have no record of their own. Their socket path follows
// containerd 1.6's rule: /run/containerd/s/<sha256(address/namespace/id)>.
func shimsOf(socket string) []shim {
	var out []shim
	for _, p := range processes() {
		if !strings.Contains(filepath.Base(p.args[0]), "containerd-shim") {
			continue
		}
		opts := flagValues(p.args)
		if opts["-address"] != socket {
			continue
		}
		sum := sha256.Sum256([]byte(filepath.Join(socket, opts["-namespace"], opts["-id"])))
		p.Name = "containerd-shim " + opts["-id"]
		out = append(out, shim{procRecord: p.procRecord, socket: fmt.Sprintf("/run/containerd/s/%x", sum)})
	}
	return out
}

// conmonsOf finds the conmon processes of the CRI-O whose folder is dir
// (CRIOConfig): each watches one container and writes its exit file into
// dir. CRI-O starts them detached, so they have no record of their own.
func conmonsOf(dir string) []procRecord {
	exits := filepath.Join(dir, "exits")
	var out []procRecord
	for _, p := range processes() {
		if filepath.Base(p.args[0]) != "conmon" || flagValues(p.args)["--exit-dir"] != exits {
			continue
		}
		p.Name = "conmon " + flagValues(p.args)["-c"]
		out = append(out, p.procRecord)
	}
	return out
}

// runcsOf finds runc commands working on a runc root of a node (its
// folder per containerd namespace under runcRoot). A shim killed during
// its runc create or delete leaves that runc running, and it goes on
// writing in the container's bundle (its log and pid file) and may create
// the container after Down has deleted the others.
func runcsOf(runcRoot string) []procRecord {
	var out []procRecord
	for _, p := range processes() {
		if filepath.Base(p.args[0]) != "runc" || filepath.Dir(flagValues(p.args)["--root"]) != runcRoot {
			continue
		}
		p.Name = "runc " + strings.Join(p.args[1:], " ")
		out = append(out, p.procRecord)
	}
	return out
}

type process struct {
	procRecord
	args []string
}

// processes lists the machine's processes with their command lines.
func processes() []process {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || len(b) == 0 {
			continue
		}
		st, err := procStartTime(pid)
		if err != nil {
			continue
		}
		out = append(out, process{procRecord{PID: pid, Start: st}, strings.Split(string(b), "\x00")})
	}
	return out
}

// flagValues maps each argument starting with "-" to the one after it.
func flagValues(args []string) map[string]string {
	opts := map[string]string{}
	for i := 0; i+1 < len(args); i++ {
		if strings.HasPrefix(args[i], "-") {
			opts[args[i]] = args[i+1]
		}
	}
	return opts
}

// removePodNetNS unmounts and removes the pod netns containerd made for
// this cluster's pods: those holding an address of the cluster's range.
func removePodNetNS(cluster netip.Prefix) []error { return removePins(podNetNS(cluster)) }

// removePins unmounts and removes namespace pins (bind mounts of a
// namespace file).
func removePins(pins []string) []error {
	var errs []error
	for _, p := range pins {
		// A pin the runtime released itself is gone (ENOENT) or no
		// longer a mount (EINVAL).
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount pod namespace %q: %w", p, err))
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove pod namespace %q: %w", p, err))
		}
	}
	return errs
}

// mountsUnder lists mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	ms, err := readMountsUnder(dir)
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Point)
	}
	return out, err
}

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct {
	Point  string
	FSType string
}

func readMountsUnder(dir string) ([]mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMountinfo(f, dir)
}

// parseMountinfo returns the mounts at or below dir, deepest first, so
// that unmounting them in that order never meets a busy parent.
func parseMountinfo(r io.Reader, dir string) ([]mountEntry, error) {
	all, err := mounts(r)
	out := slices.DeleteFunc(all, func(m mountEntry) bool { return m.Point != dir && !strings.HasPrefix(m.Point, dir+"/") })
	slices.SortStableFunc(out, func(a, b mountEntry) int { return len(b.Point) - len(a.Point) })
	return out, err
}

// mounts reads every line of a mountinfo listing, in its order.
func mounts(r io.Reader) ([]mountEntry, error) {
	var out []mountEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// id parent major:minor root point options [optional...] - type source super-options
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		m := mountEntry{Point: unescapeMountPath(fields[4])}
		if i := slices.Index(fields[5:], "-"); i >= 0 && 5+i+1 < len(fields) {
			m.FSType = fields[5+i+1]
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("read mountinfo: %w", err)
	}
	return out, nil
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// UnmountUnder detaches every mount at or below dir, deepest first; see
// unmountUnder. A folder that held a containerd must be unmounted so
// before it is removed.
func UnmountUnder(dir string) error { return errors.Join(unmountUnder(dir)...) }

// unmountUnder detaches every mount below dir: container rootfs (overlay
// or bind mounts of the snapshotter), sandbox shm, kubelet volumes (tmpfs
// for secrets and tokens), anything stacked on them. Lazily (MNT_DETACH),
// because a killed containerd or shim may leave them busy or orphaned.
func unmountUnder(dir string) []error {
	mps, err := mountsUnder(dir)
	if err != nil {
		return []error{fmt.Errorf("list mounts under %q: %w", dir, err)}
	}
	var errs []error
	for _, mp := range mps {
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %q: %w", mp, err))
		}
	}
	return errs
}

// removeContainerLogLinks removes kubelet's /var/log/containers links that
// point into the cluster folder (kubelet keeps them there for log
// collectors, and only removes them when it removes the container itself).
func removeContainerLogLinks(dir string) error {
	links, _ := filepath.Glob("/var/log/containers/*.log")
	var errs []error
	for _, l := range links {
		target, err := os.Readlink(l)
		if err != nil || !strings.HasPrefix(target, dir+"/") {
			continue
		}
		if err := os.Remove(l); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove log link %q: %w", l, err))
		}
	}
	return errors.Join(errs...)
}

func removeGlob(pattern string) error {
	paths, _ := filepath.Glob(pattern)
	var errs []error
	for _, p := range paths {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("remove %q: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// removeAllBut empties dir except the named entry. Mounts must be gone
// first: RemoveAll does not cross into a mounted filesystem safely.
func removeAllBut(dir, keep string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %q: %w", dir, err)
	}
	var errs []error
	for _, e := range entries {
		if e.Name() == keep {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, fmt.Errorf("remove %q: %w", filepath.Join(dir, e.Name()), err))
		}
	}
	return errors.Join(errs...)
}

// Process is a process the cluster started or that serves it (containerd
// shims).
type Process struct {
	Name  string
	PID   int
	start uint64
}

// Running reports whether the process still runs (same PID and start
// time, not a zombie).
func (p Process) Running() bool { return procRecord{p.Name, p.PID, p.start}.alive() }

// Processes lists the recorded processes of the cluster and the
// containerd shims serving its nodes, so callers can check that Down
// leaves none of them behind.
func (c *Cluster) Processes() ([]Process, error) {
	recs, err := readRecords(c.Dir)
	if err != nil {
		return nil, err
	}
	for _, n := range c.Nodes {
		for _, s := range shimsOf(n.CRISocket) {
			recs = append(recs, s.procRecord)
		}
		recs = append(recs, conmonsOf(filepath.Join(filepath.Dir(n.CRISocket), nodeRuntimeDir))...)
	}
	out := make([]Process, 0, len(recs))
	for _, r := range recs {
		out = append(out, Process{Name: r.Name, PID: r.PID, start: r.Start})
	}
	return out, nil
}

// RuntimePins lists the namespace pins the nodes' runtime recorded outside
// the cluster folder (CRI-O's), which Down releases; none on containerd.
func (c *Cluster) RuntimePins() []string {
	_, kind, err := kindOf(c.Runtime)
	if err != nil || kind.pins == nil {
		return nil
	}
	var out []string
	for _, n := range c.layout.Nodes {
		out = append(out, kind.pins(c.runtimePaths(n))...)
	}
	return out
}

// PodNetNS lists the pod network namespaces (/var/run/netns/cni-…) that
// containerd created for this cluster's pods.
func (c *Cluster) PodNetNS() []string { return podNetNS(c.layout.ClusterCIDR) }

// podNetNSGlobs match the pod netns the runtimes pin: containerd's
// cni-<uuid>, CRI-O's bare <uuid>.
var podNetNSGlobs = []string{"/var/run/netns/cni-*", "/var/run/netns/" + strings.Repeat("[0-9a-f]", 8) + "-*"}

func podNetNS(cluster netip.Prefix) []string {
	var paths []string
	for _, g := range podNetNSGlobs {
		m, _ := filepath.Glob(g)
		paths = append(paths, m...)
	}
	var out []string
	for _, p := range paths {
		if cniNetNSOwned(p, cluster) {
			out = append(out, p)
		}
	}
	return out
}

// Mounts lists the mount points under the cluster folder.
func (c *Cluster) Mounts() ([]string, error) { return mountsUnder(c.Dir) }

// MountTypes counts the mounts under the cluster folder by filesystem
// type (overlay for container rootfs with the overlayfs snapshotter).
func (c *Cluster) MountTypes() (map[string]int, error) {
	ms, err := readMountsUnder(c.Dir)
	n := map[string]int{}
	for _, m := range ms {
		n[m.FSType]++
	}
	return n, err
}
