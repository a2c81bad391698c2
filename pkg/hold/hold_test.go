package hold

import (
	"strings"
	"testing"

	"podnet.io/podnet/api/v1alpha1"
)

func TestParse(t *testing.T) {
	for _, m := range Settings {
		got, err := Parse("--hold-pods", string(m))
		if err != nil || got != m {
			t.Errorf("%q: got %q, %v", m, got, err)
		}
	}
	for _, bad := range []string{"", "NRI", "wait", "attachAtSandboxSetup "} {
		_, err := Parse("--hold-pods", bad)
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

// TestChooseAuto: NRI only when every node enforces it; a cluster with
// a node not reported, or none at all, gets the wait container.
func TestChooseAuto(t *testing.T) {
	for _, c := range []struct {
		nodes, enforced int
		want            v1alpha1.HoldMode
	}{
		{0, 0, v1alpha1.HoldWaitInitContainer},
		{1, 0, v1alpha1.HoldWaitInitContainer},
		{1, 1, v1alpha1.HoldNRI},
		{5000, 4999, v1alpha1.HoldWaitInitContainer},
		{5000, 5000, v1alpha1.HoldNRI},
	} {
		if got := ChooseAuto(c.nodes, c.enforced); got != c.want {
			t.Errorf("ChooseAuto(%d, %d) = %q, want %q", c.nodes, c.enforced, got, c.want)
		}
	}
}

func TestAutoOf(t *testing.T) {
	for choice, want := range map[string]v1alpha1.HoldMode{"nri": v1alpha1.HoldNRI, "waitInitContainer": v1alpha1.HoldWaitInitContainer, "": v1alpha1.HoldWaitInitContainer,
		"attachAtSandboxSetup": v1alpha1.HoldWaitInitContainer, "auto": v1alpha1.HoldWaitInitContainer, "NRI": v1alpha1.HoldWaitInitContainer} {
		if got := AutoOf(choice); got != want {
			t.Errorf("AutoOf(%q) = %q, want %q", choice, got, want)
		}
	}
}

// TestResolveHold: auto follows the cluster's choice, the wait container
// without one; the other settings are what they say.
func TestResolveHold(t *testing.T) {
	nri := func() v1alpha1.HoldMode { return v1alpha1.HoldNRI }
	for _, c := range []struct {
		setting v1alpha1.HoldMode
		auto    func() v1alpha1.HoldMode
		want    v1alpha1.HoldMode
	}{
		{"", nil, v1alpha1.HoldWaitInitContainer},
		{v1alpha1.HoldAuto, nil, v1alpha1.HoldWaitInitContainer},
		{v1alpha1.HoldAuto, nri, v1alpha1.HoldNRI},
		{v1alpha1.HoldWaitInitContainer, nri, v1alpha1.HoldWaitInitContainer},
		{v1alpha1.HoldAttachAtSandboxSetup, nri, v1alpha1.HoldAttachAtSandboxSetup},
		{v1alpha1.HoldNRI, nil, v1alpha1.HoldNRI},
	} {
		if got := Resolve(c.setting, c.auto); got != c.want {
			t.Errorf("Resolve(%q) = %q, want %q", c.setting, got, c.want)
		}
	}
}

// TestOfAgent: an agent serving the chained CNI plugin is in
// attachAtSandboxSetup; one with NRI only, auto; neither, the wait
// container.
func TestOfAgent(t *testing.T) {
	for _, c := range []struct {
		cni, nri string
		want     v1alpha1.HoldMode
	}{
		{"", "", v1alpha1.HoldWaitInitContainer},
		{"/run/podnet/cni.sock", "", v1alpha1.HoldAttachAtSandboxSetup},
		{"", "/var/run/nri/nri.sock", v1alpha1.HoldAuto},
		{"/run/podnet/cni.sock", "/var/run/nri/nri.sock", v1alpha1.HoldAttachAtSandboxSetup},
	} {
		if got := OfAgent(c.cni != "", c.nri != ""); got != c.want {
			t.Errorf("--cni-socket=%q --nri-socket=%q: %q, want %q", c.cni, c.nri, got, c.want)
		}
	}
}
