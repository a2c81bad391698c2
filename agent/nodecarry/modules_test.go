package nodecarry

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func writeConfig(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := gzip.NewWriter(f)
	if _, err := z.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestConfigReadOnceUntilTheFileChanges: probes reuse the unpacked kernel
// config, and read it again when the file is another.
func TestConfigReadOnceUntilTheFileChanges(t *testing.T) {
	var c configCache
	path := filepath.Join(t.TempDir(), "config.gz")
	writeConfig(t, path, "CONFIG_VXLAN=m\n# CONFIG_IPVLAN is not set\n")
	first := c.read(path)
	if !first["CONFIG_VXLAN"] || first["CONFIG_IPVLAN"] {
		t.Fatalf("options = %v, want CONFIG_VXLAN alone", first)
	}
	if again := c.read(path); reflect.ValueOf(again).Pointer() != reflect.ValueOf(first).Pointer() {
		t.Error("an unchanged config was unpacked again")
	}
	writeConfig(t, path, "CONFIG_VXLAN=m\nCONFIG_IPVLAN=y\nCONFIG_MACVLAN=y\n")
	if got := c.read(path); !got["CONFIG_IPVLAN"] || !got["CONFIG_MACVLAN"] {
		t.Errorf("options after the file changed = %v, want CONFIG_IPVLAN and CONFIG_MACVLAN", got)
	}
	if got := c.read(filepath.Join(t.TempDir(), "none.gz")); len(got) != 0 {
		t.Errorf("options of a missing config = %v, want none", got)
	}
}
