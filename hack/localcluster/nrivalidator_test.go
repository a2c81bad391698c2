package localcluster

import (
	"strings"
	"testing"
)

// TestNRIDefaultValidatorConfig: the option adds containerd 2.4's
// default_validator table under the NRI plugin's (its keys in
// internal/nri/config.go and NRI's DefaultValidatorConfig), and only
// then; containerd 1.6 cannot have it.
func TestNRIDefaultValidatorConfig(t *testing.T) {
	p := ContainerdPaths{Dir: "/c/n1/containerd", Socket: "/c/n1/containerd.sock", RuncRoot: "/c/n1/runc", CNIConfDir: "/c/n1/cni"}
	const table = "[plugins.'io.containerd.nri.v1.nri'.default_validator]\n    enable = true\n"
	if cfg := Containerd2Config(p, "/shim", "pause:1", SnapshotterNative); strings.Contains(cfg, "default_validator") {
		t.Errorf("validator configured without the option:\n%s", cfg)
	}
	p.NRIDefaultValidator = true
	cfg := Containerd2Config(p, "/shim", "pause:1", SnapshotterNative)
	nri := strings.Index(cfg, "[plugins.'io.containerd.nri.v1.nri']\n")
	at := strings.Index(cfg, table)
	if nri < 0 || at < nri {
		t.Errorf("config lacks %q after the NRI table:\n%s", table, cfg)
	}
	if _, err := validateOptions(Options{Name: "v", Root: "/r", NRIDefaultValidator: true}); err == nil || !strings.Contains(err.Error(), "default validator") {
		t.Errorf("validator on containerd 1.6: %v, want an error", err)
	}
	if _, err := validateOptions(Options{Name: "v", Root: "/r", Runtime: RuntimeContainerd2, NRIDefaultValidator: true}); err != nil {
		t.Errorf("validator on containerd 2: %v", err)
	}
}
