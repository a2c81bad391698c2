package nodehold

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/nriprobe"
)

// Label writes the NRI probe's answer as v1alpha1.NodeHoldNRILabel
// on the agent's own Node. Admission (ValidatingAdmissionPolicy
// podnet-agent-node-hold) lets the agent set that label on its own Node
// only, to one of v1alpha1.NodeHoldNRIValues, or remove it.
//
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
type Label struct {
	Client   client.Client
	NodeName string
	// Off, when set and true (podnet is being uninstalled), makes Set
	// remove the label instead: an uninstall leaves no podnet label on
	// the Node, and a probe finishing during it must not put one back.
	Off func() bool
}

// Set labels the node with r, or removes the label while Off.
func (l Label) Set(ctx context.Context, r nriprobe.Result) error {
	if l.Off != nil && l.Off() {
		return l.Remove(ctx)
	}
	return l.patch(ctx, string(r))
}

// Remove takes the label off the node.
func (l Label) Remove(ctx context.Context) error { return l.patch(ctx, nil) }

// patch sets the label to value, or removes it (nil).
func (l Label) patch(ctx context.Context, value any) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{v1alpha1.NodeHoldNRILabel: value}}})
	if err != nil {
		return fmt.Errorf("node %q: %w", l.NodeName, err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: l.NodeName}}
	if err := l.Client.Patch(ctx, node, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("node %q: label %s=%v: %w", l.NodeName, v1alpha1.NodeHoldNRILabel, value, err)
	}
	return nil
}

// Labels is the hold label as an uninstall takes it off and puts it
// back (NodeLabels).
type Labels struct {
	Label Label
	// Probe, when set, probes and labels again when the mark is taken
	// back.
	Probe *NRIProbe
}

// Unlabel implements NodeLabels.
func (h Labels) Unlabel(ctx context.Context) error { return h.Label.Remove(ctx) }

// Relabel implements NodeLabels.
func (h Labels) Relabel() {
	if h.Probe != nil {
		h.Probe.Kick()
	}
}
