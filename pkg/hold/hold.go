package hold

import (
	"fmt"
	"strings"

	"podnet.io/podnet/api/v1alpha1"
)

// Modes are the modes a pod is held by (the table's), in the order flags
// and messages list them.
var Modes = func() []v1alpha1.HoldMode {
	var out []v1alpha1.HoldMode
	for _, e := range table {
		out = append(out, e.Name)
	}
	return out
}()

// Settings are the values --hold-pods and Helm's holdPods accept, in the
// order flags and messages list them: the modes and HoldAuto.
var Settings = append([]v1alpha1.HoldMode{v1alpha1.HoldAuto}, Modes...)

// Parse returns the hold setting named s: a mode of Modes or HoldAuto. The
// error names what was given and every allowed value; flag is the name the
// caller shows it under (a flag or a Helm value).
func Parse(flag, s string) (v1alpha1.HoldMode, error) {
	for _, m := range Settings {
		if string(m) == s {
			return m, nil
		}
	}
	names := make([]string, len(Settings))
	for i, m := range Settings {
		names[i] = string(m)
	}
	return "", fmt.Errorf("%s %q: must be one of %s", flag, s, strings.Join(names, ", "))
}

// AutoOf is the hold the webhook gives a new pod under HoldAuto, from the
// choice ConfigMap's HoldChoiceAnnotation: HoldNRI only when it says so,
// the wait init container when it says otherwise, is missing, or has not
// been written yet.
func AutoOf(choice string) v1alpha1.HoldMode {
	if v1alpha1.HoldMode(choice) == v1alpha1.HoldNRI {
		return v1alpha1.HoldNRI
	}
	return v1alpha1.HoldWaitInitContainer
}

// ChooseAuto is HoldAuto's choice for a cluster of nodes Nodes, of which
// enforced report NodeHoldNRIEnforced: NRI only when there is at least one
// node and every node enforces it; a node that has not reported, or
// reported otherwise, may run a new pod, which NRI alone would not hold
// there. The controller writes it for the webhook to read (AutoOf).
func ChooseAuto(nodes, enforced int) v1alpha1.HoldMode {
	if nodes > 0 && enforced >= nodes {
		return v1alpha1.HoldNRI
	}
	return v1alpha1.HoldWaitInitContainer
}

// ByNRI says whether a pod's annotations show that the webhook chose NRI
// to hold it: they name podnet's plugin in NRI's required-plugins
// annotation (which a ValidatingAdmissionPolicy keeps as the webhook wrote
// it).
func ByNRI(annotations map[string]string) bool {
	return annotations[v1alpha1.NRIRequiredPluginsAnnotation] == v1alpha1.NRIRequiredPluginsValue
}

// Resolve is the mode a new pod is held by under the webhook's setting:
// auto resolves through autoHold (nil: the wait container), "" is the
// wait container.
func Resolve(setting v1alpha1.HoldMode, autoHold func() v1alpha1.HoldMode) v1alpha1.HoldMode {
	switch setting {
	case "":
		return v1alpha1.HoldWaitInitContainer
	case v1alpha1.HoldAuto:
		if autoHold == nil {
			return v1alpha1.HoldWaitInitContainer
		}
		return autoHold()
	}
	return setting
}

// OfAgent is the cluster's hold mode as far as an agent's own flags tell
// it, which matters only for attachAtSandboxSetup, the one mode that
// leaves no mark on the pod (OfPod). Every install gives the agent
// --nri-socket (the default, auto, needs it to probe the runtime), and
// only attachAtSandboxSetup's gives it --cni-socket (chainedCNI), which
// needs each node's conflist edited: an agent serving the chained plugin
// is in that mode. Otherwise the pod's own mark says how it is held, and
// the answer here is the default mode.
func OfAgent(chainedCNI, nri bool) v1alpha1.HoldMode {
	switch {
	case chainedCNI:
		return v1alpha1.HoldAttachAtSandboxSetup
	case nri:
		return v1alpha1.HoldAuto
	}
	return v1alpha1.HoldWaitInitContainer
}
