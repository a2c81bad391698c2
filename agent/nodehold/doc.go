// Package nodehold is the node's half of holding a pod until its networks
// are attached: whether this node can hold the pods of the cluster's hold
// mode (Check: a pod's condition says HoldNotEnforced where it cannot),
// the node label that tells the webhook and the admin (Label, Labels),
// the probe of the runtime's NRI (NRIProbe), and, where NRI let a
// container through all the same (a plugin hung or away), the stop of
// each container that started before the pod's links were all made, so
// that the kubelet starts it again with its networks (UnheldRestarts; the
// pure decision is unheldRestarts, once per sandbox, once per container).
//
// The hold decisions both sides share (which mode holds a pod, what a
// node needs to enforce it) are pkg/hold's. The reconcile sees this room
// through its own interfaces (agent.HoldJudge, agent.UnheldStops); the
// room imports no other room of the agent, only its vocabulary
// (agent/podstate).
package nodehold
