package localcluster

import (
	"fmt"
	"path/filepath"
)

// crioStorageDriver is CRI-O's image and container storage here: vfs
// works on every filesystem the repository may sit on and mounts
// nothing; the test images are a layer or two.
const crioStorageDriver = "vfs"

// crioStorage and crioRunStorage are CRI-O's containers-storage root and
// run root, where importIntoCRIO puts images.
func (p RuntimePaths) crioStorage() string    { return filepath.Join(p.Dir, "storage") }
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
// plugins a pod requires (see nriValidatorConfig). The sandbox image is
// imported, never pulled, and pinned against the kubelet's image GC.
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
`, p.crioStorage(), p.crioRunStorage(), crioStorageDriver, filepath.Join(p.Dir, "pod-logs"),
		filepath.Join(p.Dir, "run", "version"), filepath.Join(p.Dir, "version"), filepath.Join(p.Dir, "clean.shutdown"),
		p.Socket,
		filepath.Join(bin, "pinns"), filepath.Join(p.Dir, "exits"), filepath.Join(p.Dir, "attach"),
		filepath.Join(p.Dir, "hooks.d"), filepath.Join(p.Dir, "cdi"), filepath.Join(p.Dir, "keys"),
		filepath.Join(bin, "bundlefit"), filepath.Join(p.RuncRoot, "crio"), conmonPath,
		sandboxImage, sandboxImage, filepath.Join(bin, "policy.json"),
		p.CNIConfDir, p.cniBinDir(),
		p.nriSocket(), filepath.Join(p.Dir, "nri", "plugins"), filepath.Join(p.Dir, "nri", "conf.d"),
		p.NRIDefaultValidator)
}
