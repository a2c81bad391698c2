package localcluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// crioStorageDriver is CRI-O's image and container storage here: vfs
// works on every filesystem the repository may sit on and mounts
// nothing; the test images are a layer or two.
const crioStorageDriver = "vfs"

// crioStorage and crioRunStorage are CRI-O's containers-storage root and
// run root, where importIntoCRIO puts images.
func (p RuntimePaths) crioStorage() string {
	if p.StorageDir != "" {
		return p.StorageDir
	}
	return filepath.Join(p.Dir, "storage")
}
func (p RuntimePaths) crioRunStorage() string { return filepath.Join(p.Dir, "storage-run") }

// CRIOConfig is the configuration of a CRI-O that runs pods here, with
// every file it writes in p (storage, sockets, exit files, version
// files, logs, runc's state under p.RuncRoot where Down looks for
// containers) and binaries from bin (crio's pinns, and bundlefit, which
// runs Debian's runc; the image policy hack/crio/build.sh writes) and
// Debian (conmon). Pinned namespaces go where containerd's go, /var/run/netns, so
// the agent finds a sandbox's netns at the path the sandbox status gives
// on every runtime. NRI is on, on its own socket with its plugin folders
// under p.Dir, and with p.NRIDefaultValidator, the default validator
// requiring no plugin globally and naming no annotation that waives the
// plugins a pod requires unless p.NRITolerateAnnotation names one (see
// nriValidatorConfig). The sandbox image is
// imported, never pulled, and pinned against the kubelet's image GC.
// Containers get containerd's default capabilities (CRI-O's own lack
// NET_RAW, AUDIT_WRITE, MKNOD, SYS_CHROOT and SETFCAP), so a suite's pods
// run alike on every runtime.
func CRIOConfig(p RuntimePaths, bin, sandboxImage string) string {
	return fmt.Sprintf(`[crio]
root = %q
runroot = %q
storage_driver = %q
log_dir = %q
version_file = %q
version_file_persist = %q
clean_shutdown_file = %q

[crio.api]
listen = %q
stream_address = "127.0.0.1"
stream_port = "0"

[crio.runtime]
default_capabilities = [%s]
cgroup_manager = "cgroupfs"
default_runtime = "runc"
pinns_path = %q
namespaces_dir = "/var/run"
container_exits_dir = %q
container_attach_socket_dir = %q
hooks_dir = [%q]
cdi_spec_dirs = [%q]
decryption_keys_path = %q

[crio.runtime.runtimes.runc]
runtime_path = %q
runtime_type = "oci"
runtime_root = %q
monitor_path = %q
monitor_cgroup = "pod"

[crio.image]
pause_image = %q
pinned_images = [%q]
signature_policy = %q

[crio.network]
network_dir = %q
plugin_dirs = [%q]

[crio.nri]
enable_nri = true
nri_listen = %q
nri_plugin_dir = %q
nri_plugin_config_dir = %q

[crio.nri.default_validator]
nri_enable_default_validator = %t
nri_validator_tolerate_missing_plugins_annotation = %q
nri_validator_reject_oci_hook_adjustment = %t
`, p.crioStorage(), p.crioRunStorage(), crioStorageDriver, filepath.Join(p.Dir, "pod-logs"),
		filepath.Join(p.Dir, "run", "version"), filepath.Join(p.Dir, "version"), filepath.Join(p.Dir, "clean.shutdown"),
		p.Socket, quoted(containerdCapabilities),
		filepath.Join(bin, "pinns"), filepath.Join(p.Dir, "exits"), filepath.Join(p.Dir, "attach"),
		filepath.Join(p.Dir, "hooks.d"), filepath.Join(p.Dir, "cdi"), filepath.Join(p.Dir, "keys"),
		filepath.Join(bin, "bundlefit"), filepath.Join(p.RuncRoot, "crio"), conmonPath,
		sandboxImage, sandboxImage, filepath.Join(bin, "policy.json"),
		p.CNIConfDir, p.cniBinDir(),
		p.nriSocket(), filepath.Join(p.Dir, "nri", "plugins"), filepath.Join(p.Dir, "nri", "conf.d"),
		p.NRIDefaultValidator, p.NRITolerateAnnotation, p.NRIRejectOCIHooks)
}

// containerdCapabilities are the capabilities containerd's CRI gives a
// container by default (the set of containerd's oci.defaultUnixCaps).
var containerdCapabilities = []string{"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID",
	"SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE"}

// quoted is a TOML array's items.
func quoted(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// crioPinDirs are the folders under namespaces_dir where CRI-O's pinns
// pins a pod's namespaces.
var crioPinDirs = []string{"/var/run/netns/", "/var/run/ipcns/", "/var/run/utsns/", "/var/run/userns/"}

// crioPins lists the namespace pins recorded in the OCI configs of the
// sandboxes and containers in the containers-storage of the CRI-O whose
// paths are p: only pins this runtime made, and only in pinns' folders.
func crioPins(p RuntimePaths) []string {
	var configs []string
	for _, store := range []string{p.crioStorage(), p.crioRunStorage()} {
		m, _ := filepath.Glob(filepath.Join(store, crioStorageDriver+"-containers", "*", "userdata", "config.json"))
		configs = append(configs, m...)
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range configs {
		b, err := os.ReadFile(c)
		if err != nil {
			continue
		}
		var spec struct {
			Linux struct {
				Namespaces []struct{ Path string }
			}
		}
		if json.Unmarshal(b, &spec) != nil {
			continue
		}
		for _, ns := range spec.Linux.Namespaces {
			dir := filepath.Dir(filepath.Clean(ns.Path)) + "/"
			if ns.Path != "" && !seen[ns.Path] && slices.Contains(crioPinDirs, dir) {
				seen[ns.Path] = true
				out = append(out, ns.Path)
			}
		}
	}
	return out
}
