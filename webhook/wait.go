package webhook

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/api/wait"
)

// The wait init container runs podnet-wait from the wait image, a small
// image holding only that binary (cmd/podnet-wait), with the command line
// api/wait spells out for both sides.
const (
	// WaitBinary is podnet-wait's path inside the wait image.
	WaitBinary = wait.Binary

	// DefaultWaitImage is the locally built wait image.
	DefaultWaitImage = "localhost/podnet/wait:dev"
	// DefaultWaitTimeout is podnet-wait's own default.
	DefaultWaitTimeout = wait.DefaultTimeout

	// waitUser is the conventional "nonroot" UID of distroless images.
	waitUser = 65532
)

// Default amounts of the wait container, from podnet-wait measured
// (TestBenchWaitFootprint): a peak RSS of about 2.8 MiB, of which 1.8 MiB
// are pages of its 1.9 MB binary and 1.0 MiB its heap and stacks; 2-3 ms
// of CPU to start and 8.5-8.9m averaged over 5 s of waiting (two runs at
// load average 11-13). 16Mi leaves five times the peak, for runc's own
// start in the container's cgroup and links more numerous than a test's.
// 20m is over twice its waiting rate. The CPU limit also paces runc's own
// start in the container's cgroup: a whole run of the container (create,
// start, exit) took 218 ms at 20m, 115 ms unlimited, 117 ms at 50m and
// 623 ms at 10m; the agent image under the former 20m and 48Mi took
// 1170 ms (TestBenchWaitContainerStart). In 100 pods started at once
// (TestBenchClusterBurst, from podnet-wait's termination messages) the
// container's cgroup peaked at 5.1 MiB and the process used at most 41 ms
// of CPU, the runtime's start of it included.
const (
	DefaultWaitCPU    = "20m"
	DefaultWaitMemory = "16Mi"
)

// WaitOptions configure the injected init container.
type WaitOptions struct {
	// Image is the wait image, holding podnet-wait at WaitBinary.
	Image string
	// Timeout is passed to podnet-wait.
	Timeout time.Duration
	// CPU and Memory are the container's requests and limits when it gets
	// any (see waitResources); zero means DefaultWaitCPU / DefaultWaitMemory.
	CPU, Memory resource.Quantity
}

// waitResources are the wait container's resources in pod. They never
// change the pod's QoS class, which the API server computes over init and
// app containers alike:
//   - a pod whose containers set no CPU or memory request or limit is
//     BestEffort: the wait container gets no resources either, so it stays
//     BestEffort and reserves nothing on the node;
//   - otherwise requests equal limits: a Guaranteed pod (CNF pods usually
//     are, for CPU pinning) stays Guaranteed, since an init container with
//     requests below limits would demote it, and a Burstable pod stays
//     Burstable. A ResourceQuota on requests and limits then finds them
//     set on every container, as its admission requires.
//
// The amounts can raise a pod's effective request (the larger of its
// biggest init container and the sum of its app containers) when its app
// containers ask for less; they are kept small and configurable for that.
func waitResources(o WaitOptions, pod *corev1.Pod) corev1.ResourceRequirements {
	if !setsResources(pod) {
		return corev1.ResourceRequirements{}
	}
	cpu, mem := o.CPU, o.Memory
	if cpu.IsZero() {
		cpu = resource.MustParse(DefaultWaitCPU)
	}
	if mem.IsZero() {
		mem = resource.MustParse(DefaultWaitMemory)
	}
	amounts := corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem}
	return corev1.ResourceRequirements{Requests: amounts, Limits: amounts.DeepCopy()}
}

// setsResources reports whether a container of pod, other than the wait
// container, sets a CPU or memory request or limit: the resources the QoS
// class looks at.
func setsResources(pod *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			if c.Name == v1alpha1.WaitContainerName {
				continue
			}
			for _, l := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				if _, ok := l[corev1.ResourceCPU]; ok {
					return true
				}
				if _, ok := l[corev1.ResourceMemory]; ok {
					return true
				}
			}
		}
	}
	return false
}

// waitContainer is the init container that blocks until the approved
// interfaces exist, so the app starts with its networks. It has no
// privilege at all: reading its own netns' links needs none. Fields the API
// server would default are set explicitly, so the stored container compares
// equal to a freshly built one and a second admission changes nothing.
func waitContainer(o WaitOptions, pod *corev1.Pod, interfaces []string) corev1.Container {
	return corev1.Container{
		Name:    v1alpha1.WaitContainerName,
		Image:   o.Image,
		Command: []string{WaitBinary},
		Args: []string{
			"--" + wait.InterfacesFlag, strings.Join(interfaces, ","),
			"--" + wait.TimeoutFlag, o.Timeout.String(),
		},
		Resources:                waitResources(o, pod),
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

// Bounds of the admin's wait container amounts: above them the "small"
// container would reserve more than many app containers.
const (
	maxWaitCPU    = "1"
	maxWaitMemory = "1Gi"
)

// ParseWaitResources parses the --wait-cpu and --wait-memory flags.
func ParseWaitResources(cpu, memory string) (resource.Quantity, resource.Quantity, error) {
	c, err := parseAmount("--wait-cpu", cpu, maxWaitCPU)
	if err != nil {
		return resource.Quantity{}, resource.Quantity{}, err
	}
	m, err := parseAmount("--wait-memory", memory, maxWaitMemory)
	if err != nil {
		return resource.Quantity{}, resource.Quantity{}, err
	}
	return c, m, nil
}

// parseAmount parses one quantity that must be positive and at most max.
func parseAmount(field, value, max string) (resource.Quantity, error) {
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("%s %q: %w", field, value, err)
	}
	if q.Sign() <= 0 || q.Cmp(resource.MustParse(max)) > 0 {
		return resource.Quantity{}, fmt.Errorf("%s %s: must be positive and at most %s", field, value, max)
	}
	return q, nil
}
