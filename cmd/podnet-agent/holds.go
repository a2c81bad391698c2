package main

import (
	"podnet.io/podnet/api/v1alpha1"
)

// holdHalf is the agent's half of one hold mode of pkg/hold's table: the
// flags that make this node serve the mode, and the parts that serve it,
// in the order they need each other. The webhook's half (what a pod held
// this way gets) and what a node must offer are the table entry itself
// (hold.Mode); a new mode is one entry there, one here, and its room
// under agent/.
type holdHalf struct {
	mode v1alpha1.HoldMode
	// on says whether these flags serve the mode (nil: every node does).
	on    func(flags) bool
	steps []step
}

// holdHalves is the agent's half of every hold mode (TestHoldHalves: one
// per mode of the table).
var holdHalves = []holdHalf{
	// The wait container holds the pod by itself: nothing on the node.
	{mode: v1alpha1.HoldWaitInitContainer},
	{mode: v1alpha1.HoldAttachAtSandboxSetup, on: func(f flags) bool { return f.cniSocket != "" }, steps: []step{
		{"attach at sandbox setup", nil, (*parts).addSandboxAttach},
		{"chained CNI plugin", nil, (*parts).addCNI},
	}},
	{mode: v1alpha1.HoldNRI, on: func(f flags) bool { return f.nriSocket != "" }, steps: []step{
		{"attach at sandbox setup", nil, (*parts).addSandboxAttach},
		{"NRI plugin", nil, (*parts).addNRI},
		{"restarts of unheld containers", func(f flags) bool { return f.nriRestartUnheld }, (*parts).addUnheld},
	}},
}

// holdSteps are the steps of every hold mode's agent half, each on only
// when its mode is served.
func holdSteps() []step {
	var out []step
	for _, h := range holdHalves {
		for _, s := range h.steps {
			out = append(out, step{name: string(h.mode) + ": " + s.name, on: both(h.on, s.on), add: s.add})
		}
	}
	return out
}

// both is on when a and b are (nil: always).
func both(a, b func(flags) bool) func(flags) bool {
	return func(f flags) bool { return (a == nil || a(f)) && (b == nil || b(f)) }
}
