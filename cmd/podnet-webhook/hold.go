package main

import (
	"fmt"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/hold"
)

const holdPodsUsage = "how a new pod with networks is kept from running its app before they exist: " +
	"auto (nri while every node's agent reports its runtime enforces NRI's required plugins, label " + v1alpha1.NodeHoldNRILabel + "=" + v1alpha1.NodeHoldNRIEnforced +
	", as podnet-controller counts them on the ConfigMap " + v1alpha1.SystemNamespace + "/" + v1alpha1.HoldChoiceConfigMap + "; waitInitContainer otherwise), " +
	"waitInitContainer (inject the podnet-wait init container; works on every runtime), " +
	"attachAtSandboxSetup (inject nothing: every node chains podnet's CNI plugin podnet-cni and the agent serves --cni-socket), " +
	"nri (annotate the pod " + v1alpha1.NRIRequiredPluginsAnnotation + ": " + v1alpha1.NRIRequiredPluginsValue +
	": every node's runtime runs NRI and the agent serves --nri-socket; only the runtime's NRI default validator keeps a pod's containers from starting while the agent is not connected, and a container whose creation the agent leaves unanswered past the runtime's plugin timeout (agent hung or killed mid-call) starts all the same). " +
	"Every mode adds the readiness gate, which keeps the pod out of Service endpoints until its networks are attached"

// holdMode reads --hold-pods and its deprecated alias
// --attach-at-sandbox-setup (true: attachAtSandboxSetup, false:
// waitInitContainer). Both given must mean the same mode: a deployment that
// sets one and a patch that sets the other would otherwise silently run a
// mode nobody chose.
func holdMode(f flags) (v1alpha1.HoldMode, error) {
	mode, err := hold.Parse("--hold-pods", f.holdPods)
	if err != nil {
		return "", err
	}
	if !f.set["attach-at-sandbox-setup"] {
		return mode, nil
	}
	alias := v1alpha1.HoldWaitInitContainer
	if f.attachAtSandboxSetup {
		alias = v1alpha1.HoldAttachAtSandboxSetup
	}
	if f.set["hold-pods"] && alias != mode {
		return "", fmt.Errorf("--attach-at-sandbox-setup=%v (deprecated, meaning --hold-pods=%s) contradicts --hold-pods=%s: give only --hold-pods", f.attachAtSandboxSetup, alias, mode)
	}
	return alias, nil
}
