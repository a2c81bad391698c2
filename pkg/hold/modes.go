package hold

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// Mode is the one entry of a way of holding a pod: what the webhook adds to
// a new pod it holds so, how the agent tells such a pod from the pod
// itself, and what a node must offer for the hold to work. The webhook
// (its hold change), the agent (the pod's condition, the
// podnet_agent_hold_mode_enforceable metric) and the flags read the
// table; a new mode is one entry here, plus what serves it on the node.
type Mode struct {
	Name v1alpha1.HoldMode
	// Doc says what the mode does and needs, for --hold-pods (Usage).
	Doc string
	// Wait: the webhook injects the podnet-wait init container.
	Wait bool
	// RequirePlugin: the webhook names podnet's NRI plugin in the pod's
	// required-plugins annotation.
	RequirePlugin bool
	// Marked says whether a pod shows it was held this way; nil: the
	// mode leaves no mark on the pod, and only the cluster's mode says.
	Marked func(*corev1.Pod) bool
	// Enforceable says whether a node offering n holds pods this way and,
	// when it does not, what the node lacks.
	Enforceable func(n Node) (bool, string)
}

// Node is what a node offers to hold a pod until its networks exist.
type Node struct {
	// NRI: the agent's NRI plugin is connected to the node's runtime.
	NRI bool
	// NRIValidator: the agent's last probe of the runtime found NRI's
	// default validator on: the runtime refuses a container whose pod
	// requires a plugin that did not process it, so a pod held by NRI
	// stays held while the agent is not connected. False when the probe
	// found it off, could not tell, or has not run.
	NRIValidator bool
	// ChainedCNI: the agent serves the socket of podnet's chained CNI
	// plugin (--cni-socket), which its install-cni init container put in
	// the node's CNI bin folder.
	ChainedCNI bool
}

// table is every mode, in the order flags and messages list them. A pod
// is matched against the marked modes in this order: a pod that asked for
// the wait container under NRI is held by the wait container.
var table = []Mode{
	{
		Name: v1alpha1.HoldWaitInitContainer, Wait: true,
		Doc: "inject the podnet-wait init container; works on every runtime",
		Marked: func(pod *corev1.Pod) bool {
			for _, c := range pod.Spec.InitContainers {
				if c.Name == v1alpha1.WaitContainerName {
					return true
				}
			}
			return false
		},
		// The wait container needs nothing of the node.
		Enforceable: func(Node) (bool, string) { return true, "" },
	},
	{
		Name: v1alpha1.HoldAttachAtSandboxSetup,
		Doc:  "inject nothing: every node chains podnet's CNI plugin podnet-cni and the agent serves --cni-socket",
		Enforceable: func(n Node) (bool, string) {
			if n.ChainedCNI {
				return true, ""
			}
			return false, "this node's agent does not serve podnet's chained CNI plugin (--cni-socket)"
		},
	},
	{
		Name: v1alpha1.HoldNRI, RequirePlugin: true,
		Doc: "annotate the pod " + v1alpha1.NRIRequiredPluginsAnnotation + ": " + v1alpha1.NRIRequiredPluginsValue +
			": every node's runtime runs NRI and the agent serves --nri-socket; only the runtime's NRI default validator keeps a pod's containers from starting while the agent is not connected, and a container whose creation the agent leaves unanswered past the runtime's plugin timeout (agent hung or killed mid-call) starts all the same",
		Marked: func(pod *corev1.Pod) bool { return ByNRI(pod.Annotations) },
		Enforceable: func(n Node) (bool, string) {
			switch {
			case !n.NRI:
				return false, "this node's agent has no NRI plugin connected to the runtime (agent without --nri-socket, runtime without NRI, or reconnecting)"
			case !n.NRIValidator:
				return false, "this node's runtime does not run NRI's default validator (the agent's probe found it off or could not tell; see " + v1alpha1.NodeHoldNRILabel + " on the Node), so it creates containers without podnet's plugin while the agent is not connected"
			}
			return true, ""
		},
	},
}

// Of is the entry of mode m.
func Of(m v1alpha1.HoldMode) (Mode, bool) {
	for _, e := range table {
		if e.Name == m {
			return e, true
		}
	}
	return Mode{}, false
}

// Enforceable says whether a node offering n holds pods in mode m and,
// when it does not, what the node lacks.
func Enforceable(m v1alpha1.HoldMode, n Node) (bool, string) {
	e, ok := Of(m)
	if !ok {
		return false, fmt.Sprintf("hold mode %q is unknown to this agent", m)
	}
	return e.Enforceable(n)
}

// OfPod is the hold the webhook gave pod in a cluster whose mode is
// cluster, read from the pod itself where it shows (a marked mode). A mode
// that leaves no mark (attaching at sandbox setup) is the answer only when
// it is the cluster's. "" means none the agent can tell: a pod that opted
// out of the wait container, or one created before the cluster changed
// modes.
func OfPod(pod *corev1.Pod, cluster v1alpha1.HoldMode) v1alpha1.HoldMode {
	for _, e := range table {
		if e.Marked != nil && e.Marked(pod) {
			return e.Name
		}
	}
	if e, ok := Of(cluster); ok && e.Marked == nil {
		return cluster
	}
	return ""
}

// Usage describes the hold settings for --hold-pods: auto and each mode
// of the table with its Doc.
func Usage() string {
	parts := []string{string(v1alpha1.HoldAuto) + " (nri while every node's agent reports its runtime enforces NRI's required plugins, label " +
		v1alpha1.NodeHoldNRILabel + "=" + v1alpha1.NodeHoldNRIEnforced + ", as podnet-controller counts them on the ConfigMap " +
		v1alpha1.SystemNamespace + "/" + v1alpha1.HoldChoiceConfigMap + "; waitInitContainer otherwise)"}
	for _, e := range table {
		parts = append(parts, string(e.Name)+" ("+e.Doc+")")
	}
	return "how a new pod with networks is kept from running its app before they exist: " + strings.Join(parts, ", ") +
		". Every mode adds the readiness gate, which keeps the pod out of Service endpoints until its networks are attached"
}
