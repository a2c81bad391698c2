package oomclamp

import (
	"encoding/json"
	"testing"
)

func TestBundleOf(t *testing.T) {
	for _, c := range []struct {
		args   []string
		bundle string
		ok     bool
	}{
		{[]string{"--root", "/r", "--log-format", "json", "create", "--bundle", "/b", "--pid-file", "/p", "id"}, "/b", true},
		{[]string{"--systemd-cgroup", "run", "-b", "/b2", "id"}, "/b2", true},
		{[]string{"create", "--bundle=/b3", "id"}, "/b3", true},
		{[]string{"create", "id"}, ".", true},
		{[]string{"--root", "/r", "exec", "--process", "/p.json", "id"}, "", false},
		{[]string{"--log-format", "create", "state", "id"}, "", false},
		{[]string{"--version"}, "", false},
	} {
		bundle, ok := bundleOf(c.args)
		if bundle != c.bundle || ok != c.ok {
			t.Errorf("bundleOf(%q) = %q, %v; want %q, %v", c.args, bundle, ok, c.bundle, c.ok)
		}
	}
}

func TestClamp(t *testing.T) {
	in := []byte(`{"ociVersion":"1.0.2","process":{"args":["/pause"],"oomScoreAdj":-997},"root":{"path":"rootfs"}}`)
	out, changed, err := Clamp(in, 0)
	if err != nil || !changed {
		t.Fatalf("Clamp: changed %v, err %v", changed, err)
	}
	var got struct {
		OCIVersion string
		Process    struct {
			Args        []string
			OOMScoreAdj int
		}
		Root struct{ Path string }
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.Process.OOMScoreAdj != 0 || got.OCIVersion != "1.0.2" || got.Root.Path != "rootfs" || len(got.Process.Args) != 1 {
		t.Errorf("clamped config %s: want oomScoreAdj 0 and every other field kept", out)
	}
	for _, keep := range []string{`{"process":{"oomScoreAdj":500}}`, `{"process":{"args":["x"]}}`, `{"root":{}}`} {
		if _, changed, err := Clamp([]byte(keep), 0); changed || err != nil {
			t.Errorf("Clamp(%s) changed %v, err %v; want it unchanged", keep, changed, err)
		}
	}
	if _, _, err := Clamp([]byte("{"), 0); err == nil {
		t.Error("Clamp of a broken config: no error")
	}
}
