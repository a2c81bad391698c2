package kubectlpodnet

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"podnet.io/podnet/pkg/version"
)

// TestVersionCommand: `kubectl podnet version` answers without a cluster
// and names the release of pkg/version/VERSION.
func TestVersionCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	t.Setenv("KUBECONFIG", "/nonexistent")
	if code := Main(context.Background(), []string{"version"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if got := strings.TrimSpace(out.String()); !strings.HasPrefix(got, "kubectl-podnet "+version.Version) {
		t.Fatalf("version printed %q, want it to start with %q", got, "kubectl-podnet "+version.Version)
	}
}
