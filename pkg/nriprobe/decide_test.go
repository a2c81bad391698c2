package nriprobe

import (
	"errors"
	"fmt"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// TestMeaning: created means off, the validator's refusal naming the
// probe's plugin means on, anything else (another plugin's refusal, a
// timeout) tells nothing.
func TestMeaning(t *testing.T) {
	for _, c := range []struct {
		err  error
		want Result
	}{
		{nil, Unenforced},
		{errors.New(`rpc error: code = Unknown desc = failed to create containerd container: validation error: required plugin "podnet-validator-probe" not present`), Enforced},
		{fmt.Errorf("wrapped: %w", errors.New(`validation error: required plugin "podnet-validator-probe" not present`)), Enforced},
		{errors.New(`validation error: required plugin "podnet" not present`), Unknown},
		{errors.New("context deadline exceeded"), Unknown},
		{errors.New(`image "pause" not found`), Unknown},
	} {
		if got := Meaning(c.err); got != c.want {
			t.Errorf("Meaning(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

func TestPinnedImage(t *testing.T) {
	imgs := []*runtimeapi.Image{
		{Id: "sha256:a", RepoTags: []string{"app:1"}},
		{Id: "sha256:b", Pinned: true, RepoTags: []string{"registry.k8s.io/pause:3.10"}},
	}
	if got := PinnedImage(imgs); got != "registry.k8s.io/pause:3.10" {
		t.Errorf("PinnedImage = %q, want the pinned one's tag", got)
	}
	if got := PinnedImage([]*runtimeapi.Image{{Id: "sha256:c", Pinned: true}}); got != "sha256:c" {
		t.Errorf("PinnedImage of an untagged pinned image = %q, want its id", got)
	}
	if got := PinnedImage(imgs[:1]); got != "" {
		t.Errorf("PinnedImage with none pinned = %q, want \"\"", got)
	}
}

// TestSandboxConfig: the probe's pod is the node's netns (no CNI), requires
// only the plugin nobody serves, and carries no label of the kubelet's.
func TestSandboxConfig(t *testing.T) {
	cfg := sandboxConfig("u")
	if got := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork(); got != runtimeapi.NamespaceMode_NODE {
		t.Errorf("network namespace mode %v, want NODE", got)
	}
	if got := cfg.GetAnnotations()[v1alpha1.NRIRequiredPluginsAnnotation]; got != `["podnet-validator-probe"]` {
		t.Errorf("required plugins %q", got)
	}
	if _, ok := cfg.GetAnnotations()[v1alpha1.ApprovedAnnotation]; ok {
		t.Error("the probe carries an approval: podnet's NRI plugin would hold it")
	}
	for k := range cfg.GetLabels() {
		if len(k) > 14 && k[:14] == "io.kubernetes." {
			t.Errorf("label %q is the kubelet's", k)
		}
	}
}
