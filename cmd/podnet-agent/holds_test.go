package main

import (
	"slices"
	"testing"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/hold"
)

// TestHoldHalves: every mode of pkg/hold's table has one agent half, and
// the flags switch on the parts that serve the modes they name, the
// sandbox handshake once for both sandbox-setup paths.
func TestHoldHalves(t *testing.T) {
	var halves []v1alpha1.HoldMode
	for _, h := range holdHalves {
		halves = append(halves, h.mode)
	}
	if !slices.Equal(halves, hold.Modes) {
		t.Fatalf("agent halves %v, want one per mode of the table %v", halves, hold.Modes)
	}
	on := func(f flags) []string {
		var out []string
		for _, s := range holdSteps() {
			if s.on == nil || s.on(f) {
				out = append(out, s.name)
			}
		}
		return out
	}
	for _, c := range []struct {
		name string
		f    flags
		want []string
	}{
		{"no socket", flags{nriRestartUnheld: true}, nil},
		{"cni", flags{cniSocket: "/run/podnet/cni.sock"}, []string{"attachAtSandboxSetup: attach at sandbox setup", "attachAtSandboxSetup: chained CNI plugin"}},
		{"nri", flags{nriSocket: "/run/nri.sock", nriRestartUnheld: true}, []string{"nri: attach at sandbox setup", "nri: NRI plugin", "nri: restarts of unheld containers"}},
		{"nri without restarts", flags{nriSocket: "/run/nri.sock"}, []string{"nri: attach at sandbox setup", "nri: NRI plugin"}},
	} {
		if got := on(c.f); !slices.Equal(got, c.want) {
			t.Errorf("%s: steps %q, want %q", c.name, got, c.want)
		}
	}
}
