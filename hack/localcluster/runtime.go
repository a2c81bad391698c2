package localcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The container runtimes a node can run.
const (
	// RuntimeContainerd is Debian's containerd 1.6 from the PATH: the
	// default (Options.Runtime "").
	RuntimeContainerd = "containerd"
	// RuntimeContainerd2 is containerd 2, built from its Go module by
	// hack/containerd2/build.sh into Containerd2BinDir, with its own runc
	// shim and NRI on (each node its own NRI socket).
	RuntimeContainerd2 = "containerd2"
)

// RuntimeNames lists the values Options.Runtime takes, for flag help.
const RuntimeNames = `"containerd" (Debian's 1.6, the default) or "containerd2" (built from its Go module)`

// validateRuntime fills the default and refuses unknown runtimes.
func validateRuntime(r string) (string, error) {
	switch r {
	case "", RuntimeContainerd:
		return RuntimeContainerd, nil
	case RuntimeContainerd2:
		return r, nil
	}
	return "", fmt.Errorf("runtime %q: must be %s", r, RuntimeNames)
}

// Containerd2BinDir is where hack/containerd2/build.sh puts containerd 2
// and its shim.
func Containerd2BinDir(root string) string {
	return filepath.Join(root, "_output", "containerd2", "bin")
}

// Containerd2Shim is the name of containerd 2's runc shim in
// Containerd2BinDir.
const Containerd2Shim = "containerd-shim-runc-v2"

// NodeNRISocket is where, relative to a node's folder, a containerd 2 node
// serves NRI: containerd's default, /var/run/nri/nri.sock, would be one
// socket for every node of every cluster on the machine.
const NodeNRISocket = "nri.sock"

// BuildContainerd2 builds containerd 2 from the pin in hack/containerd2
// (only when the pin changed: seconds when cached), so a cluster or a
// test asking for it never finds it missing.
// Its progress lines go to log (nil discards them).
func BuildContainerd2(ctx context.Context, root string, log io.Writer) error {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "containerd2", "build.sh"))
	cmd.Dir = root
	var out strings.Builder
	w := io.Writer(&out)
	if log != nil {
		w = io.MultiWriter(&out, log)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build containerd 2 (hack/containerd2/build.sh): %w: %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}

// ContainerdCommand is the containerd binary of a runtime: Debian's from
// the PATH, or containerd 2 from Containerd2BinDir, which must be built.
func ContainerdCommand(root, runtime string) (string, error) {
	runtime, err := validateRuntime(runtime)
	if err != nil {
		return "", err
	}
	if runtime == RuntimeContainerd {
		return "containerd", nil
	}
	bin := filepath.Join(Containerd2BinDir(root), "containerd")
	for _, f := range []string{bin, filepath.Join(Containerd2BinDir(root), Containerd2Shim)} {
		if _, err := os.Stat(f); err != nil {
			return "", fmt.Errorf("runtime %q: %w (build it with `make containerd2`)", runtime, err)
		}
	}
	return bin, nil
}

// RuntimeConfig is the configuration file of a runtime: ContainerdConfig
// for containerd 1.6, Containerd2Config (with the shim of root's build)
// for containerd 2.
func RuntimeConfig(root, runtime string, p ContainerdPaths, sandboxImage, snapshotter string) (string, error) {
	runtime, err := validateRuntime(runtime)
	if err != nil {
		return "", err
	}
	if runtime == RuntimeContainerd2 {
		return Containerd2Config(p, filepath.Join(Containerd2BinDir(root), Containerd2Shim), sandboxImage, snapshotter), nil
	}
	return ContainerdConfig(p, sandboxImage, snapshotter), nil
}

// Containerd2Config is ContainerdConfig in containerd 2's format
// (version 3: the CRI plugin split into io.containerd.cri.v1.images and
// io.containerd.cri.v1.runtime), with the same settings and every path in
// p, plus: the runc shim given by path (shim), never one found on the
// PATH (Debian's is containerd 1.6's); and NRI on, its socket at
// p.NRISocket and its plugin folders under p.Dir, so that no plugin the
// machine has installed for its own containerd is started by a node's.
func Containerd2Config(p ContainerdPaths, shim, sandboxImage, snapshotter string) string {
	return fmt.Sprintf(`version = 3
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.erofs"]

[grpc]
  address = %q

[plugins.'io.containerd.internal.v1.opt']
  path = %q

[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = %q
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %q

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      runtime_path = %q
      snapshotter = %q
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %q
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%q]
    conf_dir = %q
    max_conf_num = 1

[plugins.'io.containerd.nri.v1.nri']
  disable = false
  socket_path = %q
  plugin_path = %q
  plugin_config_path = %q
%s`, filepath.Join(p.Dir, "root"), filepath.Join(p.Dir, "state"), p.Socket, filepath.Join(p.Dir, "opt"),
		snapshotter, sandboxImage, shim, snapshotter, p.RuncRoot, p.cniBinDir(), p.CNIConfDir,
		p.nriSocket(), filepath.Join(p.Dir, "nri", "plugins"), filepath.Join(p.Dir, "nri", "conf.d"), nriValidator(p))
}

// nriValidator is the NRI section enabling its default validator, which
// refuses a container that a plugin the pod requires did not process.
func nriValidator(p ContainerdPaths) string {
	if !p.NRIDefaultValidator {
		return ""
	}
	return "  [plugins.'io.containerd.nri.v1.nri'.default_validator]\n    enable = true\n"
}

// nriSocket is p.NRISocket, by default NodeNRISocket in p.Dir.
func (p ContainerdPaths) nriSocket() string {
	if p.NRISocket == "" {
		return filepath.Join(p.Dir, NodeNRISocket)
	}
	return p.NRISocket
}
