package localcluster

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestContainerd2Config: containerd 2's configuration is in its own
// format (version 3), carries the settings these machines need, runs the
// shim it is given, and keeps every path it names in the node's folders:
// above all its NRI socket, whose default would be one file for every
// node on the machine.
func TestContainerd2Config(t *testing.T) {
	node := "/c/e2e/e2e-n1"
	p := RuntimePaths{Dir: filepath.Join(node, "containerd"), Socket: filepath.Join(node, "containerd.sock"),
		RuncRoot: filepath.Join(node, "runc"), CNIConfDir: filepath.Join(node, "cni", "net.d"), NRISocket: filepath.Join(node, NodeNRISocket)}
	shim := "/r/_output/containerd2/bin/" + Containerd2Shim
	cfg := Containerd2Config(p, shim, "pause:1", SnapshotterNative)
	for _, want := range []string{
		"version = 3\n",
		"[plugins.'io.containerd.cri.v1.images']\n  snapshotter = \"native\"",
		"sandbox = \"pause:1\"",
		"restrict_oom_score_adj = true",
		"runtime_path = \"" + shim + "\"",
		"Root = \"" + p.RuncRoot + "\"",
		"bin_dirs = [\"" + SystemCNIBinDir + "\"]",
		"[plugins.'io.containerd.nri.v1.nri']\n  disable = false\n  socket_path = \"" + p.NRISocket + "\"",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q:\n%s", want, cfg)
		}
	}
	// Every absolute path is the shim, the machine's CNI plugins, or under
	// the node's folder.
	for _, m := range regexp.MustCompile(`"(/[^"]*)"`).FindAllStringSubmatch(cfg, -1) {
		if path := m[1]; path != shim && path != SystemCNIBinDir && !strings.HasPrefix(path, node+"/") {
			t.Errorf("config names %q, outside the node's folder %s", path, node)
		}
	}
	if strings.Contains(cfg, "/var/run/nri") {
		t.Errorf("config names the machine's NRI socket folder:\n%s", cfg)
	}
	// Without a socket of its own it still gets one in its folder.
	p.NRISocket = ""
	if cfg := Containerd2Config(p, shim, "pause:1", SnapshotterNative); !strings.Contains(cfg, "socket_path = \""+filepath.Join(p.Dir, NodeNRISocket)+"\"") {
		t.Errorf("config without NRISocket does not serve NRI in %s:\n%s", p.Dir, cfg)
	}
}

// TestRuntimeConfig picks each runtime's format and refuses unknown ones.
func TestRuntimeConfig(t *testing.T) {
	p := RuntimePaths{Dir: "/n/containerd", Socket: "/n/containerd.sock", RuncRoot: "/n/runc", CNIConfDir: "/n/net.d"}
	for rt, want := range map[string]string{"": "version = 2\n", RuntimeContainerd: "version = 2\n", RuntimeContainerd2: "version = 3\n", RuntimeCRIO: "[crio]\n"} {
		cfg, err := RuntimeConfig("/r", rt, p, "pause:1", SnapshotterOverlayfs)
		if err != nil || !strings.HasPrefix(cfg, want) {
			t.Errorf("runtime %q: config starts %.20q, err %v; want %q", rt, cfg, err, want)
		}
	}
	if _, err := RuntimeConfig("/r", "containerd3", p, "pause:1", SnapshotterOverlayfs); err == nil || !strings.Contains(err.Error(), `runtime "containerd3"`) {
		t.Errorf("unknown runtime: err = %v, want one naming it", err)
	}
	for rt, make := range map[string]string{RuntimeContainerd2: "make containerd2", RuntimeCRIO: "make crio"} {
		if _, err := RuntimeCommand(t.TempDir(), rt); err == nil || !strings.Contains(err.Error(), make) {
			t.Errorf("%s not built: err = %v, want one saying how to build it (%s)", rt, err, make)
		}
	}
}
