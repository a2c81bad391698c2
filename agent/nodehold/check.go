package nodehold

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/hold"
)

// What a node can enforce of the hold the webhook promised a pod. The
// webhook holds every new podnet pod the one way the admin chose for the
// cluster (--hold-pods); whether that hold works depends on each node: its
// runtime, and what the agent serves there. The decision is pure
// (hold.Enforceable, hold.OfPod, holdResult); Check wires it to the
// reconciler's status and to a metric.

// holdResult is res as the pod's condition must say it on a node offering
// n: where the node cannot enforce the pod's hold, attached networks are
// reported as HoldNotEnforced (the app may have started before them), and
// a failed attach names the missing hold next to its own reason. Results
// that concern no hold (no networks, uninstalling) stay as they are.
func holdResult(pod *corev1.Pod, cluster v1alpha1.HoldMode, n hold.Node, res podstate.Result) podstate.Result {
	switch res.Reason {
	case v1alpha1.ReasonNoNetworks, v1alpha1.ReasonUninstalling, v1alpha1.ReasonHoldNotEnforced:
		return res
	}
	mode := hold.OfPod(pod, cluster)
	if mode == "" {
		return res
	}
	ok, lacks := hold.Enforceable(mode, n)
	if ok {
		return res
	}
	note := fmt.Sprintf("hold not enforced: the pod is held by %s, but %s, so its app may start before its networks", mode, lacks)
	if res.Ready {
		return podstate.Result{Ready: true, Reason: v1alpha1.ReasonHoldNotEnforced, Message: res.Message + "; " + note}
	}
	res.Message += "; " + note
	return res
}

// Check judges pods' holds against what this node offers now, and
// exports podnet_agent_hold_mode_enforceable{mode}: 1 for each mode this
// node enforces, read from Node at every scrape. A nil *Check changes
// nothing.
type Check struct {
	// Mode is the cluster's hold mode (the webhook's --hold-pods).
	Mode v1alpha1.HoldMode
	// Node reports what the node offers now (say, whether the NRI plugin
	// is connected at this moment).
	Node func() hold.Node
}

// NewCheck returns a Check and registers its metric with reg.
func NewCheck(reg prometheus.Registerer, mode v1alpha1.HoldMode, node func() hold.Node) (*Check, error) {
	h := &Check{Mode: mode, Node: node}
	for _, m := range hold.Modes {
		g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "podnet_agent_hold_mode_enforceable",
			Help:        "1 when this node holds pods in the mode until their networks exist, 0 when it cannot (see the HoldNotEnforced condition reason).",
			ConstLabels: prometheus.Labels{"mode": string(m)},
		}, func() float64 {
			if ok, _ := hold.Enforceable(m, h.Node()); ok {
				return 1
			}
			return 0
		})
		if err := reg.Register(g); err != nil {
			return nil, fmt.Errorf("register podnet_agent_hold_mode_enforceable{mode=%q}: %w", m, err)
		}
	}
	return h, nil
}

// Judge is holdResult on this node now; the reconciler passes every
// result through it before writing the pod's condition.
func (h *Check) Judge(pod *corev1.Pod, res podstate.Result) podstate.Result {
	if h == nil {
		return res
	}
	return holdResult(pod, h.Mode, h.Node(), res)
}
