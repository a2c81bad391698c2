package nodehold

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/cristop"
	"podnet.io/podnet/pkg/hold"
)

// A pod held by NRI can still start a container before its networks: the
// runtime creates the container whose CreateContainer reached a hung
// plugin (NRI drops the plugin after its 2 s timeout and counts the call
// as processed, so even its default validator lets that one container
// through), and without the validator every container created while the
// agent is away. When the agent then attaches the pod's networks for the
// first time in that sandbox, it stops each container that started before
// the links were all created, so that the kubelet starts it again with
// them. All, not the first: a container that slipped through while the
// attach had built one interface of two ran without the other.
// unheldRestarts is that decision, pure; UnheldRestarts carries it out.

// unheldInput is what the decision reads.
type unheldInput struct {
	// pod is the pod: its spec and its hold (the annotations the runtime
	// saw at sandbox setup cannot change on a running pod).
	pod *corev1.Pod
	// containers are the sandbox's running containers.
	containers []cristop.Container
	// attachedAt is when the attach that first made the pod's networks
	// ready in the sandbox had built them, before it answered the
	// plugin: no container the plugin held could start before it.
	attachedAt time.Time
	// since is when the pod's condition last turned False (zero when the
	// agent never wrote one), from unheldCandidate.
	since time.Time
}

// unheldVerdict is what is done about one container that started before
// its networks.
type unheldVerdict struct {
	Container cristop.Container
	// Stop: the kubelet starts the container again once stopped; else it
	// is only reported.
	Stop bool
	// Grace is the stop's grace period.
	Grace time.Duration
	// Why says it, for the Event and the log.
	Why string
}

// unheldGrace is the grace period of a container the kubelet restarts
// whatever its exit code; under restartPolicy OnFailure the container is
// killed at once, since one that exits 0 on its stop signal would not be
// started again.
const unheldGrace = 2 * time.Second

// unheldCandidate says whether the attach about to run may be the first
// of the pod's networks in its sandbox, read from the pod before it:
//   - the pod is held by NRI (the webhook's required-plugins annotation
//     names podnet's plugin; set only at CREATE, so a runtime attach to a
//     pod created without networks never counts);
//   - the agent has not reported the networks attached: the condition is
//     not True and the network-status lists no podnet interface (an agent
//     restart over attached pods, a change of networks at runtime, a
//     narrowing or a widening back find one or the other).
//
// since is when the condition turned False, zero when there is none.
func unheldCandidate(pod *corev1.Pod) (since time.Time, ok bool) {
	// The annotation, not hold.OfPod: a pod may carry the wait container
	// too, and NRI holds every container of it all the same.
	if !hold.ByNRI(pod.Annotations) {
		return time.Time{}, false
	}
	c := podstate.FindCondition(pod)
	if c != nil && c.Status == corev1.ConditionTrue {
		return time.Time{}, false
	}
	if len(podstate.Attached(podstate.DecodeStatus(pod.Annotations[v1alpha1.NetworkStatusAnnotation]))) > 0 {
		return time.Time{}, false
	}
	if c != nil {
		since = c.LastTransitionTime.Time
	}
	return since, true
}

// unheldRestarts decides, once the networks of a candidate pod are
// attached, which of its sandbox's running containers started before
// them. A container counts when it is not the wait init container (which
// waits for the links by design), started before attachedAt and not before
// since (one that started while networks were up, before a revocation the
// condition still shows, is left alone).
func unheldRestarts(in unheldInput) []unheldVerdict {
	var out []unheldVerdict
	for _, c := range in.containers {
		if c.Name == v1alpha1.WaitContainerName || !c.StartedAt.Before(in.attachedAt) || c.StartedAt.Before(in.since) {
			continue
		}
		out = append(out, verdictFor(in.pod, c, in.attachedAt))
	}
	return out
}

// verdictFor is what is done about c: stopped when the kubelet starts it
// again.
func verdictFor(pod *corev1.Pod, c cristop.Container, attachedAt time.Time) unheldVerdict {
	policy, known := RestartPolicyOf(pod, c.Name)
	started := fmt.Sprintf("container %q started at %s, %s before the pod's networks were attached (the runtime created it while podnet's NRI plugin was not answering)",
		c.Name, c.StartedAt.UTC().Format(time.RFC3339Nano), attachedAt.Sub(c.StartedAt).Round(time.Millisecond))
	v := unheldVerdict{Container: c}
	switch {
	case !known:
		v.Why = started + "; not stopped: it is no container of the pod's spec the kubelet would start again"
	case policy == corev1.ContainerRestartPolicyAlways:
		v.Stop, v.Grace = true, unheldGrace
		v.Why = started + "; stopped so that the kubelet starts it again with its networks"
	case policy == corev1.ContainerRestartPolicy(corev1.RestartPolicyOnFailure):
		v.Stop = true
		v.Why = started + "; killed so that the kubelet starts it again with its networks (restartPolicy OnFailure)"
	default:
		v.Why = started + "; not stopped: restartPolicy Never, the kubelet would not start it again"
	}
	return v
}

// RestartPolicyOf is the restart policy the kubelet applies to the pod's
// container name: a sidecar's own Always, else the pod's, except that an
// init container is started again only after a failure (one that exits 0
// on its stop signal counts as done); known is false for an ephemeral
// container or a name not in the spec.
func RestartPolicyOf(pod *corev1.Pod, name string) (policy corev1.ContainerRestartPolicy, known bool) {
	podPolicy := corev1.ContainerRestartPolicy(pod.Spec.RestartPolicy)
	if podPolicy == "" {
		podPolicy = corev1.ContainerRestartPolicyAlways
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return podPolicy, true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name != name {
			continue
		}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			return corev1.ContainerRestartPolicyAlways, true
		}
		if podPolicy == corev1.ContainerRestartPolicyAlways {
			return corev1.ContainerRestartPolicy(corev1.RestartPolicyOnFailure), true
		}
		return podPolicy, true
	}
	return "", false
}
