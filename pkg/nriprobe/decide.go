package nriprobe

import (
	"fmt"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// ProbePlugin is the NRI plugin the probe's pod requires: no plugin has
// this name, so a runtime running NRI's default validator refuses the
// probe's container.
const ProbePlugin = "podnet-validator-probe"

// Result is what the probe found, spelled as the agent writes it on its
// Node (v1alpha1.NodeHoldNRILabel).
type Result string

const (
	Enforced   Result = v1alpha1.NodeHoldNRIEnforced
	Unenforced Result = v1alpha1.NodeHoldNRIUnenforced
	Unknown    Result = v1alpha1.NodeHoldNRIUnknown
)

// Names that make the probe's sandbox obviously podnet's: no
// io.kubernetes.* label, so the kubelet counts it as no pod of its own.
const (
	SandboxName      = "podnet-nri-validator-probe"
	SandboxNamespace = "podnet-system"
	ContainerName    = "probe"
	// ProbeLabel marks the sandbox and its container.
	ProbeLabel      = "podnet.io/probe"
	ProbeLabelValue = "nri-validator"
)

// refusal is how NRI's default validator names the missing plugin
// (github.com/containerd/nri plugins/default-validator, v0.12:
// `required plugin "<name>" not present`); the runtime wraps it in its own
// words.
var refusal = fmt.Sprintf("required plugin %q not present", ProbePlugin)

// Meaning is the probe's answer from the error of its CreateContainer:
// created (nil) means the validator is off; refused by the validator,
// naming ProbePlugin, means it is on; any other error tells nothing.
func Meaning(createErr error) Result {
	switch {
	case createErr == nil:
		return Unenforced
	case strings.Contains(createErr.Error(), refusal):
		return Enforced
	}
	return Unknown
}

// PinnedImage is the reference of an image the runtime pins (its sandbox
// image, in containerd and CRI-O alike), by tag when it has one: the
// probe's container comes from it, so that it is never pulled. "" when the
// runtime pins none.
func PinnedImage(images []*runtimeapi.Image) string {
	for _, img := range images {
		if !img.GetPinned() {
			continue
		}
		if tags := img.GetRepoTags(); len(tags) > 0 {
			return tags[0]
		}
		return img.GetId()
	}
	return ""
}

// sandboxConfig is the probe's pod: in the node's network namespace, so
// that the runtime calls no CNI plugin, and requiring ProbePlugin. uid
// makes each probe's sandbox its own.
func sandboxConfig(uid string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:    &runtimeapi.PodSandboxMetadata{Name: SandboxName, Namespace: SandboxNamespace, Uid: uid},
		Labels:      map[string]string{ProbeLabel: ProbeLabelValue},
		Annotations: map[string]string{v1alpha1.NRIRequiredPluginsAnnotation: `["` + ProbePlugin + `"]`},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
		}},
	}
}

// containerConfig is the probe's one container, never started.
func containerConfig(image string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: ContainerName},
		// CRI-O refuses a container whose image the user did not name
		// (it checks that name's signature policy); the kubelet names it.
		Image:  &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: image},
		Labels: map[string]string{ProbeLabel: ProbeLabelValue},
	}
}
