package webhook

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"podnet.io/podnet/api/v1alpha1"
)

// The wait init container runs `podnet-agent wait` from the agent image:
//
//	/usr/local/bin/podnet-agent wait --interfaces net1,net2 --timeout 5m0s
//
// It exits 0 once every listed interface exists in its own network
// namespace (the pod's), and non-zero with a message naming the missing
// interfaces when the timeout passes. These flags are the contract with the
// agent's wait subcommand.
const (
	// AgentBinary is the agent's path inside the agent image.
	AgentBinary = "/usr/local/bin/podnet-agent"
	// WaitSubcommand is the agent subcommand the init container runs.
	WaitSubcommand = "wait"
	// WaitInterfacesFlag lists the interface names, comma-separated.
	WaitInterfacesFlag = "--interfaces"
	// WaitTimeoutFlag is how long to wait, as a Go duration.
	WaitTimeoutFlag = "--timeout"

	// DefaultWaitImage is the locally built agent image.
	DefaultWaitImage = "localhost/podnet/agent:dev"
	// DefaultWaitTimeout is long enough for an image pull on a slow node,
	// short enough that a broken node shows up as a failed init container.
	DefaultWaitTimeout = 5 * time.Minute

	// waitUser is the conventional "nonroot" UID of distroless images.
	waitUser = 65532
)

// WaitOptions configure the injected init container.
type WaitOptions struct {
	// Image is the agent image.
	Image string
	// Timeout is passed to `podnet-agent wait`.
	Timeout time.Duration
}

// waitResources are equal requests and limits: an init container with
// requests below its limits would demote a Guaranteed pod (the QoS class
// counts init containers), and CNF pods are usually Guaranteed for CPU
// pinning. The amounts are far below what any app container asks, so they
// never raise the pod's effective request.
var waitResources = corev1.ResourceRequirements{
	Requests: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("50m"),
		corev1.ResourceMemory: resource.MustParse("64Mi"),
	},
	Limits: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("50m"),
		corev1.ResourceMemory: resource.MustParse("64Mi"),
	},
}

// waitContainer is the init container that blocks until the approved
// interfaces exist, so the app starts with its networks. It has no
// privilege at all: reading its own netns' links needs none. Fields the API
// server would default are set explicitly, so the stored container compares
// equal to a freshly built one and a second admission changes nothing.
func waitContainer(o WaitOptions, interfaces []string) corev1.Container {
	return corev1.Container{
		Name:    v1alpha1.WaitContainerName,
		Image:   o.Image,
		Command: []string{AgentBinary},
		Args: []string{
			WaitSubcommand,
			WaitInterfacesFlag, strings.Join(interfaces, ","),
			WaitTimeoutFlag, o.Timeout.String(),
		},
		Resources:                waitResources,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To[int64](waitUser),
			RunAsGroup:               ptr.To[int64](waitUser),
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Privileged:               ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
}
