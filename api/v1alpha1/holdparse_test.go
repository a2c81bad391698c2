package v1alpha1

import (
	"strings"
	"testing"
)

func TestParseHoldMode(t *testing.T) {
	for _, m := range HoldModes {
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
		for _, s := range []string{"--hold-pods", `"` + bad + `"`, "waitInitContainer, attachAtSandboxSetup, nri"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%q: error %q does not name %q", bad, err, s)
			}
		}
	}
}
