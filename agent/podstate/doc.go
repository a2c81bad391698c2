// Package podstate is the agent's vocabulary for a pod's state, the floor
// every room of the agent stands on: how a pod is named (Ref), how its
// approval is read (Verifier), what a reconcile concluded (Result) and the
// condition that says so, the network-status annotation's codec, the
// Events the agent emits, and the priorities of its work queue.
//
// It imports no room of the agent, so the reconcile and the rooms beside it
// (the sandbox handshake, the node's hold, resource claims, the uninstall)
// can all use it without importing each other.
package podstate
