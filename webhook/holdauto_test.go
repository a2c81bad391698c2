package webhook

import (
	"testing"

	"podnet.io/podnet/api/v1alpha1"
)

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
		if got := resolveHold(c.setting, c.auto); got != c.want {
			t.Errorf("resolveHold(%q) = %q, want %q", c.setting, got, c.want)
		}
	}
}
