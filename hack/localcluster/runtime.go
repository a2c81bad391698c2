package localcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"podnet.io/podnet/hack/image"
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
	// RuntimeCRIO is CRI-O, built from its Go module by hack/crio/build.sh
	// into CRIOBinDir, with Debian's conmon and runc and NRI on (each node
	// its own NRI socket).
	RuntimeCRIO = "crio"
)

// runtimeKind is what the local cluster and the CRI tests need to know of
// one runtime: one entry per runtime, so a new runtime is a registration,
// not a branch at every call site.
type runtimeKind struct {
	about string
	// script builds the runtime from its pin (relative to the module
	// root); "" for a runtime Debian installs.
	script string
	// make is the make target that runs script, for error messages.
	make string
	// helpers are Go commands of podnet's module the runtime runs, built
	// into the given path (relative to the module root) with the runtime.
	helpers map[string]string
	// binaries are the files the runtime needs, the command first.
	binaries func(root string) []string
	// config renders the runtime's configuration file.
	config func(root string, p RuntimePaths, sandboxImage, snapshotter string) string
	// importImage puts an image tarball where the runtime finds it.
	importImage func(ctx context.Context, p RuntimePaths, snapshotter, tarball string) error
	// nri: the runtime serves NRI plugins (on p.NRISocket).
	nri bool
	// pins lists the namespace pins outside the cluster folder that the
	// runtime whose paths are p recorded (CRI-O's ipc, uts and network
	// namespaces under /var/run), for Down to release whether or not the
	// runtime still runs; containerd pins only network namespaces, which
	// Down finds by the cluster's addresses.
	pins func(p RuntimePaths) []string
	// version is how its CRI Version call's runtime_version starts, and
	// nodeVersion how the kubelet reports it on the Node
	// (ContainerRuntimeVersion, "v" dropped), so that a suite meant for
	// one runtime never passes on another found first on the PATH.
	version, nodeVersion string
}

var runtimes = map[string]runtimeKind{
	RuntimeContainerd: {
		about:       "Debian's containerd 1.6, the default",
		binaries:    func(string) []string { return []string{"containerd"} },
		config:      func(_ string, p RuntimePaths, img, snap string) string { return ContainerdConfig(p, img, snap) },
		importImage: importIntoContainerd,
		version:     "1.6", nodeVersion: "containerd://1.6",
	},
	RuntimeContainerd2: {
		about:  "containerd 2, built from its Go module",
		script: "hack/containerd2/build.sh", make: "make containerd2",
		binaries: func(root string) []string {
			return []string{filepath.Join(Containerd2BinDir(root), "containerd"), filepath.Join(Containerd2BinDir(root), Containerd2Shim)}
		},
		config: func(root string, p RuntimePaths, img, snap string) string {
			return Containerd2Config(p, filepath.Join(Containerd2BinDir(root), Containerd2Shim), img, snap)
		},
		importImage: importIntoContainerd,
		nri:         true,
		version:     "v2.", nodeVersion: "containerd://2.",
	},
	RuntimeCRIO: {
		about:  "CRI-O, built from its Go module",
		script: "hack/crio/build.sh", make: "make crio",
		helpers: map[string]string{"./hack/localcluster/cmd/bundlefit": filepath.Join("_output", "crio", "bin", "bundlefit")},
		binaries: func(root string) []string {
			b := CRIOBinDir(root)
			return []string{filepath.Join(b, "crio"), filepath.Join(b, "pinns"), filepath.Join(b, "bundlefit"), filepath.Join(b, "policy.json"), conmonPath, runcPath}
		},
		config:      func(root string, p RuntimePaths, img, _ string) string { return CRIOConfig(p, CRIOBinDir(root), img) },
		importImage: importIntoCRIO,
		nri:         true,
		pins:        crioPins,
		version:     "1.36.", nodeVersion: "cri-o://1.36.",
	},
}

// RuntimeNames lists the values Options.Runtime takes, for flag help.
var RuntimeNames = func() string {
	names := make([]string, 0, len(runtimes))
	for n, k := range runtimes {
		names = append(names, fmt.Sprintf("%q (%s)", n, k.about))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}()

// kindOf is the registration of runtime r ("" is RuntimeContainerd).
func kindOf(r string) (string, runtimeKind, error) {
	if r == "" {
		r = RuntimeContainerd
	}
	k, ok := runtimes[r]
	if !ok {
		return "", runtimeKind{}, fmt.Errorf("runtime %q: must be one of %s", r, RuntimeNames)
	}
	return r, k, nil
}

// validateRuntime fills the default and refuses unknown runtimes.
func validateRuntime(r string) (string, error) {
	r, _, err := kindOf(r)
	return r, err
}

// ServesNRI says whether runtime serves NRI plugins.
func ServesNRI(runtime string) bool {
	_, k, err := kindOf(runtime)
	return err == nil && k.nri
}

// RuntimeVersions are how runtime's CRI Version call (cri) and the
// kubelet's Node status (node, "v" dropped) name its version.
func RuntimeVersions(runtime string) (cri, node string, err error) {
	_, k, err := kindOf(runtime)
	return k.version, k.nodeVersion, err
}

// Containerd2BinDir is where hack/containerd2/build.sh puts containerd 2
// and its shim.
func Containerd2BinDir(root string) string {
	return filepath.Join(root, "_output", "containerd2", "bin")
}

// Containerd2Shim is the name of containerd 2's runc shim in
// Containerd2BinDir.
const Containerd2Shim = "containerd-shim-runc-v2"

// CRIOBinDir is where hack/crio/build.sh puts crio and pinns.
func CRIOBinDir(root string) string {
	return filepath.Join(root, "_output", "crio", "bin")
}

// Debian's conmon and runc, which CRI-O runs (hack/setup.sh installs
// them); runc through bundlefit.
const (
	conmonPath = "/usr/bin/conmon"
	runcPath   = "/usr/sbin/runc"
)

// NodeNRISocket is where, relative to a node's folder, a node whose
// runtime serves NRI serves it: the runtimes' default,
// /var/run/nri/nri.sock, would be one socket for every node of every
// cluster on the machine.
const NodeNRISocket = "nri.sock"

// BuildRuntime builds runtime from its pin (only when the pin changed:
// seconds when cached), so a cluster or a test asking for it never finds
// it missing; a runtime Debian installs needs nothing. Its progress lines
// go to log (nil discards them).
func BuildRuntime(ctx context.Context, root, runtime string, log io.Writer) error {
	r, k, err := kindOf(runtime)
	if err != nil {
		return err
	}
	if k.script != "" {
		if err := runScript(ctx, root, k.script, log); err != nil {
			return fmt.Errorf("build runtime %q: %w", r, err)
		}
	}
	for pkg, out := range k.helpers {
		if err := image.BuildGoBinary(ctx, root, pkg, filepath.Join(root, out)); err != nil {
			return fmt.Errorf("build runtime %q: %w", r, err)
		}
	}
	return nil
}

// runScript runs a build script of the module at root, its output to log.
func runScript(ctx context.Context, root, script string, log io.Writer) error {
	cmd := exec.CommandContext(ctx, filepath.Join(root, script))
	cmd.Dir = root
	var out strings.Builder
	w := io.Writer(&out)
	if log != nil {
		w = io.MultiWriter(&out, log)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", script, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// RuntimeCommand is the command of a runtime (Debian's from the PATH, or
// the build's, which must be there), started with --config and its
// configuration file.
func RuntimeCommand(root, runtime string) (string, error) {
	r, k, err := kindOf(runtime)
	if err != nil {
		return "", err
	}
	bins := k.binaries(root)
	for _, f := range bins {
		if !filepath.IsAbs(f) {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			hint := "install it with hack/setup.sh"
			if k.make != "" && strings.HasPrefix(f, root) {
				hint = "build it with `" + k.make + "`"
			}
			return "", fmt.Errorf("runtime %q: %w (%s)", r, err, hint)
		}
	}
	return bins[0], nil
}

// RuntimeConfig is the configuration file of a runtime for a node (or a
// CRI test) whose every path is in p.
func RuntimeConfig(root, runtime string, p RuntimePaths, sandboxImage, snapshotter string) (string, error) {
	_, k, err := kindOf(runtime)
	if err != nil {
		return "", err
	}
	return k.config(root, p, sandboxImage, snapshotter), nil
}

// ImportInto imports an image tarball (docker-save, one image) into the
// runtime whose paths are p, with snapshotter for a containerd.
func ImportInto(ctx context.Context, runtime string, p RuntimePaths, snapshotter, tarball string) error {
	_, k, err := kindOf(runtime)
	if err != nil {
		return err
	}
	if tarball == "" {
		return fmt.Errorf("import image into %q: no tarball given", p.Socket)
	}
	return k.importImage(ctx, p, snapshotter, tarball)
}

func importIntoContainerd(ctx context.Context, p RuntimePaths, snapshotter, tarball string) error {
	if snapshotter == "" {
		return fmt.Errorf("import %q into containerd %q: no snapshotter given", tarball, p.Socket)
	}
	cmd := exec.CommandContext(ctx, "ctr", "--address", p.Socket, "-n", "k8s.io", "images", "import", "--snapshotter", snapshotter, tarball)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("import %q into containerd %q: %w: %s", tarball, p.Socket, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// importIntoCRIO copies the tarball's image into the node's
// containers-storage with skopeo: CRI-O has no import call and reads its
// store on every image lookup, so the image is there at once.
func importIntoCRIO(ctx context.Context, p RuntimePaths, _, tarball string) error {
	ref, err := archiveTag(tarball)
	if err != nil {
		return err
	}
	dest := fmt.Sprintf("containers-storage:[%s@%s+%s]%s", crioStorageDriver, p.crioStorage(), p.crioRunStorage(), ref)
	cmd := exec.CommandContext(ctx, "skopeo", "--insecure-policy", "copy", "--quiet", "docker-archive:"+tarball, dest)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("import %q into CRI-O's storage %q: %w: %s", tarball, p.crioStorage(), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// archiveTag is the one tag of the one image in a docker-save tarball.
func archiveTag(tarball string) (string, error) {
	out, err := exec.Command("tar", "-xOf", tarball, "manifest.json").Output()
	if err != nil {
		return "", fmt.Errorf("read manifest.json of %q: %w", tarball, err)
	}
	var m []struct{ RepoTags []string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", fmt.Errorf("decode manifest.json of %q: %w", tarball, err)
	}
	if len(m) != 1 || len(m[0].RepoTags) != 1 {
		return "", fmt.Errorf("image tarball %q: holds %d images; want one with one tag", tarball, len(m))
	}
	return m[0].RepoTags[0], nil
}

// Containerd2Config is ContainerdConfig in containerd 2's format
// (version 3: the CRI plugin split into io.containerd.cri.v1.images and
// io.containerd.cri.v1.runtime), with the same settings and every path in
// p, plus: the runc shim given by path (shim), never one found on the
// PATH (Debian's is containerd 1.6's); and NRI on, its socket at
// p.NRISocket and its plugin folders under p.Dir, so that no plugin the
// machine has installed for its own containerd is started by a node's;
// with p.NRIDefaultValidator, NRI's default validator (nriValidatorConfig).
func Containerd2Config(p RuntimePaths, shim, sandboxImage, snapshotter string) string {
	return containerd2Base(p, shim, sandboxImage, snapshotter) + nriValidatorConfig(p)
}

// nriValidatorConfig is the default validator's section of containerd
// 2.4's NRI plugin (github.com/containerd/nri v0.12
// plugins/default-validator, DefaultValidatorConfig): on, requiring no
// plugin of every container (required_plugins would hold the node's own
// static pods too), and with no tolerate_missing_plugins_annotation, which
// would let a pod's own annotation waive the plugins its
// required-plugins.noderesource.dev annotation names, unless
// p.NRITolerateAnnotation names one (as an admin may, for podnet's
// webhook to refuse). Pods name their plugins themselves: podnet's webhook
// names podnet's on podnet pods.
func nriValidatorConfig(p RuntimePaths) string {
	if !p.NRIDefaultValidator {
		return ""
	}
	cfg := `  [plugins.'io.containerd.nri.v1.nri'.default_validator]
    enable = true
`
	if p.NRITolerateAnnotation != "" {
		cfg += fmt.Sprintf("    tolerate_missing_plugins_annotation = %q\n", p.NRITolerateAnnotation)
	}
	if p.NRIRejectOCIHooks {
		cfg += "    reject_oci_hook_adjustment = true\n"
	}
	return cfg
}

// containerd2Base is Containerd2Config without the NRI default validator.
func containerd2Base(p RuntimePaths, shim, sandboxImage, snapshotter string) string {
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
`, filepath.Join(p.Dir, "root"), filepath.Join(p.Dir, "state"), p.Socket, filepath.Join(p.Dir, "opt"),
		snapshotter, sandboxImage, shim, snapshotter, p.RuncRoot, p.cniBinDir(), p.CNIConfDir,
		p.nriSocket(), filepath.Join(p.Dir, "nri", "plugins"), filepath.Join(p.Dir, "nri", "conf.d"))
}

// nriSocket is p.NRISocket, by default NodeNRISocket in p.Dir.
func (p RuntimePaths) nriSocket() string {
	if p.NRISocket == "" {
		return filepath.Join(p.Dir, NodeNRISocket)
	}
	return p.NRISocket
}
