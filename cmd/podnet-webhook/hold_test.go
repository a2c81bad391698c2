package main

import (
	"strings"
	"testing"

	"podnet.io/podnet/api/v1alpha1"
)

func TestHoldMode(t *testing.T) {
	set := func(names ...string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	const def = string(v1alpha1.HoldAuto)
	for _, c := range []struct {
		name string
		f    flags
		want v1alpha1.HoldMode
		err  []string
	}{
		{"default", flags{holdPods: def}, v1alpha1.HoldAuto, nil},
		{"auto", flags{holdPods: "auto", set: set("hold-pods")}, v1alpha1.HoldAuto, nil},
		{"nri", flags{holdPods: "nri", set: set("hold-pods")}, v1alpha1.HoldNRI, nil},
		{"alias", flags{holdPods: def, attachAtSandboxSetup: true, set: set("attach-at-sandbox-setup")}, v1alpha1.HoldAttachAtSandboxSetup, nil},
		{"alias false", flags{holdPods: def, set: set("attach-at-sandbox-setup")}, v1alpha1.HoldWaitInitContainer, nil},
		{"both agree", flags{holdPods: "attachAtSandboxSetup", attachAtSandboxSetup: true, set: set("hold-pods", "attach-at-sandbox-setup")}, v1alpha1.HoldAttachAtSandboxSetup, nil},
		{"both differ", flags{holdPods: "nri", attachAtSandboxSetup: true, set: set("hold-pods", "attach-at-sandbox-setup")}, "",
			[]string{"--attach-at-sandbox-setup=true", "--hold-pods=nri", "contradicts"}},
		{"alias false against attach", flags{holdPods: "attachAtSandboxSetup", set: set("hold-pods", "attach-at-sandbox-setup")}, "",
			[]string{"--attach-at-sandbox-setup=false", "waitInitContainer", "contradicts"}},
		{"bad value", flags{holdPods: "cni", set: set("hold-pods")}, "",
			[]string{"--hold-pods", `"cni"`, "auto, waitInitContainer, attachAtSandboxSetup, nri"}},
	} {
		got, err := holdMode(c.f)
		if got != c.want {
			t.Errorf("%s: mode %q, want %q", c.name, got, c.want)
		}
		if (err != nil) != (c.err != nil) {
			t.Errorf("%s: error %v", c.name, err)
			continue
		}
		for _, s := range c.err {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, s)
			}
		}
	}
}

func TestNRITolerateFlag(t *testing.T) {
	got, err := nriTolerate(" a.example.com/tolerate ,b,,")
	if err != nil || len(got) != 2 || got[0] != "a.example.com/tolerate" || got[1] != "b" {
		t.Fatalf("got %q, %v", got, err)
	}
	if got, err := nriTolerate(""); err != nil || got != nil {
		t.Fatalf("empty: %q, %v", got, err)
	}
	if _, err := nriTolerate("ok,bad key"); err == nil || !strings.Contains(err.Error(), `--nri-tolerate-annotations "ok,bad key": "bad key" is not an annotation key`) {
		t.Fatalf("bad key: %v", err)
	}
}
