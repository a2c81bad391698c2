package localcluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nriPaths are a node's containerd paths for the tests of the NRI
// default validator.
func nriPaths(dir string, validator bool) RuntimePaths {
	return RuntimePaths{Dir: filepath.Join(dir, "containerd"), Socket: filepath.Join(dir, "containerd.sock"),
		RuncRoot: filepath.Join(dir, "runc"), CNIConfDir: filepath.Join(dir, "net.d"), NRIDefaultValidator: validator}
}

const validatorSection = "[plugins.'io.containerd.nri.v1.nri'.default_validator]\n    enable = true\n"

// TestContainerd2ConfigNRIDefaultValidator: the option writes the
// validator's section, on and requiring no plugin globally nor naming an
// annotation that would waive the plugins a pod requires; without it
// there is none.
func TestContainerd2ConfigNRIDefaultValidator(t *testing.T) {
	on := Containerd2Config(nriPaths("/n", true), "/shim", "pause:1", SnapshotterNative)
	if !strings.Contains(on, "[plugins.'io.containerd.nri.v1.nri']\n  disable = false") || !strings.HasSuffix(on, validatorSection) {
		t.Errorf("config lacks the validator after NRI's own section:\n%s", on)
	}
	for _, never := range []string{"required_plugins", "tolerate_missing_plugins_annotation"} {
		if strings.Contains(on, never) {
			t.Errorf("config sets %s:\n%s", never, on)
		}
	}
	if off := Containerd2Config(nriPaths("/n", false), "/shim", "pause:1", SnapshotterNative); strings.Contains(off, "default_validator") {
		t.Errorf("config without the option turns the validator on:\n%s", off)
	}
	for _, rt := range []string{"", RuntimeContainerd} {
		_, err := validateOptions(Options{Name: "v", Root: "/r", Runtime: rt, NRIDefaultValidator: true})
		if err == nil || !strings.Contains(err.Error(), "NRI default validator") || !strings.Contains(err.Error(), "serves no NRI") {
			t.Errorf("runtime %q with the validator: %v, want a refusal naming the validator and NRI", rt, err)
		}
	}
	for _, rt := range []string{RuntimeContainerd2, RuntimeCRIO} {
		if _, err := validateOptions(Options{Name: "v", Root: "/r", Runtime: rt, NRIDefaultValidator: true}); err != nil {
			t.Errorf("%s with the validator: %v", rt, err)
		}
	}
}

// TestContainerd2ReadsNRIDefaultValidator: containerd 2 itself (the build
// the local cluster runs) reads the rendered configuration with the
// validator on and nothing required globally; containerd ignores keys it
// does not know, so only its own reading proves the spelling.
func TestContainerd2ReadsNRIDefaultValidator(t *testing.T) {
	_, bin := containerd2(t)
	for _, on := range []bool{true, false} {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "config.toml")
		if err := os.WriteFile(cfg, []byte(Containerd2Config(nriPaths(dir, on), "/shim", "pause:1", SnapshotterNative)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "--config", cfg, "config", "dump").CombinedOutput()
		if err != nil {
			t.Fatalf("containerd config dump: %v\n%s", err, out)
		}
		dump := string(out)
		i := strings.Index(dump, "[plugins.'io.containerd.nri.v1.nri'.default_validator]")
		if i < 0 {
			t.Fatalf("dump has no validator section:\n%s", dump)
		}
		section := dump[i:]
		if j := strings.Index(section, "\n\n"); j > 0 {
			section = section[:j]
		}
		want := map[bool]string{true: "enable = true", false: "enable = false"}[on]
		for _, s := range []string{want, "required_plugins = []", "tolerate_missing_plugins_annotation = ''"} {
			if !strings.Contains(section, s) {
				t.Errorf("option %v: containerd read %q, want %q in it", on, section, s)
			}
		}
	}
	// The annotation an admin may name, read as containerd reads it.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	p := nriPaths(dir, true)
	p.NRITolerateAnnotation = "example.com/tolerate"
	if err := os.WriteFile(cfg, []byte(Containerd2Config(p, "/shim", "pause:1", SnapshotterNative)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--config", cfg, "config", "dump").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "tolerate_missing_plugins_annotation = 'example.com/tolerate'") {
		t.Errorf("containerd config dump with a tolerate annotation (%v) lacks it:\n%s", err, out)
	}
}

// containerd2 is the repository root and the containerd 2 the local
// cluster runs, built when missing (seconds when its pin is unchanged).
func containerd2(t *testing.T) (root, bin string) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if err := BuildRuntime(context.Background(), root, RuntimeContainerd2, nil); err != nil {
		t.Fatal(err)
	}
	bin, err = RuntimeCommand(root, RuntimeContainerd2)
	if err != nil {
		t.Fatal(err)
	}
	return root, bin
}
