package v1alpha1

import (
	"strings"
	"testing"
)

func TestParseHoldMode(t *testing.T) {
	for _, m := range HoldSettings {
		got, err := ParseHoldMode("--hold-pods", string(m))
		if err != nil || got != m {
			t.Errorf("%q: got %q, %v", m, got, err)
		}
	}
	for _, bad := range []string{"", "NRI", "wait", "attachAtSandboxSetup "} {
		_, err := ParseHoldMode("--hold-pods", bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
			continue
		}
		for _, s := range []string{"--hold-pods", `"` + bad + `"`, "auto, waitInitContainer, attachAtSandboxSetup, nri"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%q: error %q does not name %q", bad, err, s)
			}
		}
	}
}

// TestChooseAutoHold: NRI only when every node enforces it; a cluster with
// a node not reported, or none at all, gets the wait container.
func TestChooseAutoHold(t *testing.T) {
	for _, c := range []struct {
		nodes, enforced int
		want            HoldMode
	}{
		{0, 0, HoldWaitInitContainer},
		{1, 0, HoldWaitInitContainer},
		{1, 1, HoldNRI},
		{5000, 4999, HoldWaitInitContainer},
		{5000, 5000, HoldNRI},
	} {
		if got := ChooseAutoHold(c.nodes, c.enforced); got != c.want {
			t.Errorf("ChooseAutoHold(%d, %d) = %q, want %q", c.nodes, c.enforced, got, c.want)
		}
	}
}

func TestAutoHoldOf(t *testing.T) {
	for choice, want := range map[string]HoldMode{"nri": HoldNRI, "waitInitContainer": HoldWaitInitContainer, "": HoldWaitInitContainer,
		"attachAtSandboxSetup": HoldWaitInitContainer, "auto": HoldWaitInitContainer, "NRI": HoldWaitInitContainer} {
		if got := AutoHoldOf(choice); got != want {
			t.Errorf("AutoHoldOf(%q) = %q, want %q", choice, got, want)
		}
	}
}
