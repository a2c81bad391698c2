package agent

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/agent/nodehold"
	"podnet.io/podnet/agent/podstate"
)

// HoldJudge notes on a pod's result that this node cannot hold the pod
// the way the cluster's hold mode promised (*nodehold.Check): the
// reconcile passes every result through it before it writes the pod's
// condition.
type HoldJudge interface {
	Judge(pod *corev1.Pod, res podstate.Result) podstate.Result
}

// UnheldStops stops the containers of a pod held by NRI that the runtime
// started before the pod's networks (*nodehold.UnheldRestarts).
type UnheldStops interface {
	// Before notes, just before an attach may create the pod's first
	// link in the sandbox, when that is.
	Before(pod *corev1.Pod, sandbox string)
	// After stops, once the attach built the networks, what started
	// before them.
	After(ctx context.Context, events podstate.EventRecorder, pod *corev1.Pod, sandbox string, built, ready bool, attachedAt time.Time) error
}

var (
	_ HoldJudge   = (*nodehold.Check)(nil)
	_ UnheldStops = (*nodehold.UnheldRestarts)(nil)
)
