package webhook_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"podnet.io/podnet/webhook"
)

// TestBinaryRefusesBadHoldPods: the real podnet-webhook exits at once,
// before it reaches for the API server, on a --hold-pods it does not know
// and on --hold-pods and the deprecated --attach-at-sandbox-setup naming
// different modes, saying which flag and which values.
func TestBinaryRefusesBadHoldPods(t *testing.T) {
	bin := webhook.BuildCommand(t, "./cmd/podnet-webhook")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--hold-pods=cni"}, []string{`--hold-pods "cni": must be one of auto, waitInitContainer, attachAtSandboxSetup, nri`}},
		{[]string{"--hold-pods=nri", "--attach-at-sandbox-setup"}, []string{"--attach-at-sandbox-setup=true", "contradicts --hold-pods=nri"}},
	} {
		cmd := exec.Command(bin, c.args...)
		// No cluster: the process must not get as far as looking for one.
		cmd.Env = []string{"KUBECONFIG=/nonexistent"}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("%v: %v, want exit status 1\n%s", c.args, err, out)
		}
		for _, s := range c.want {
			if !strings.Contains(string(out), s) {
				t.Errorf("%v: output %q does not say %q", c.args, out, s)
			}
		}
	}
}
