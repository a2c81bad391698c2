package agent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/nriprobe"
)

// NodeHoldLabel writes the NRI probe's answer as v1alpha1.NodeHoldNRILabel
// on the agent's own Node. Admission (ValidatingAdmissionPolicy
// podnet-agent-node-hold) lets the agent set that label on its own Node
// only, to one of v1alpha1.NodeHoldNRIValues.
//
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
type NodeHoldLabel struct {
	Client   client.Client
	NodeName string
}

// Set labels the node with r.
func (l NodeHoldLabel) Set(ctx context.Context, r nriprobe.Result) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, v1alpha1.NodeHoldNRILabel, r)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: l.NodeName}}
	if err := l.Client.Patch(ctx, node, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("node %q: label %s=%s: %w", l.NodeName, v1alpha1.NodeHoldNRILabel, r, err)
	}
	return nil
}
