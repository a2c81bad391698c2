package agent

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crevent "sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/carry"
)

// NodeCarry tells what this node has, as its last probe found
// (agent/nodecarry.Labeler); known is false before the first probe.
type NodeCarry interface {
	Have() (have carry.Node, known bool)
}

// carries refuses a pod whose node cannot carry one of its networks
// (pkg/carry, the rule the webhook placed it by): a pod bound by name, or
// whose node lost a NIC. It is not retried: CarryChanged looks at the
// node's pods again when what the node has changes. Before the first
// probe nothing is refused.
func (r *Reconciler) carries(ctx context.Context, at *attempt) *outcome {
	if r.Carry == nil {
		return nil
	}
	have, known := r.Carry.Have()
	if !known {
		return nil
	}
	var profiles v1alpha1.NetworkProfileList
	if err := r.Client.List(ctx, &profiles); err != nil {
		return &outcome{stage: stageUnjudged, err: fmt.Errorf("pod %s/%s: list networkprofiles: %w", at.pod.Namespace, at.pod.Name, err)}
	}
	if msg := cannotCarry(r.NodeName, have, profiles.Items, at.approval); msg != "" {
		return refusal(stageCannotCarry, v1alpha1.ReasonNodeCannotCarry, msg)
	}
	return nil
}

// cannotCarry says, for every approved interface whose profile network
// the node cannot carry, what it lacks; "" when it carries them all. A
// network no profile offers any more is the grant check's to refuse.
func cannotCarry(node string, have carry.Node, profiles []v1alpha1.NetworkProfile, a *v1alpha1.Approval) string {
	var parts []string
	for _, ai := range a.Interfaces {
		network := profileNetwork(profiles, ai.Profile, ai.Network)
		if network == nil {
			continue
		}
		if lacks := carry.Lacks(have, network); len(lacks) > 0 {
			parts = append(parts, fmt.Sprintf("network %q (interface %s, profile %s) needs %s", ai.Network, ai.Interface, ai.Profile, strings.Join(lacks, ", ")))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("node %s cannot carry %s; no network attached", node, strings.Join(parts, "; "))
}

func profileNetwork(profiles []v1alpha1.NetworkProfile, profile, network string) *v1alpha1.Network {
	for i := range profiles {
		if profiles[i].Name != profile {
			continue
		}
		for j := range profiles[i].Spec.Networks {
			if profiles[i].Spec.Networks[j].Name == network {
				return &profiles[i].Spec.Networks[j]
			}
		}
	}
	return nil
}

// carrySource is where CarryChanged's pods enter the queue.
func (r *Reconciler) carrySource() source.Source {
	r.carryOnce.Do(func() { r.carryEvents = make(chan crevent.GenericEvent, 256) })
	return source.Channel(r.carryEvents, podstate.Urgent())
}

// CarryChanged looks again at every approved pod of the node: what the
// node can carry changed (a NIC came or went, a profile's needs changed).
func (r *Reconciler) CarryChanged() {
	r.carryOnce.Do(func() { r.carryEvents = make(chan crevent.GenericEvent, 256) })
	ctx := context.Background()
	reqs := r.approvedPods(ctx, func(*corev1.Pod) bool { return true })
	if len(reqs) == 0 {
		return
	}
	logf.FromContext(ctx).V(1).Info("what the node carries changed: looking again at its pods", "pods", len(reqs))
	go func() {
		for _, req := range reqs {
			r.carryEvents <- crevent.GenericEvent{Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}}
		}
	}()
}
