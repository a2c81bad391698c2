// Package runtimeready is the agent's readiness check of its container
// runtime: the agent is ready only while the runtime answers on the CRI
// endpoint it was given, and when it stops answering the agent says so,
// with the endpoint and what to set, in its /readyz and in an Event on its
// Node. A wrong socket path (a CRI-O node with containerd's default) is
// then found by `kubectl describe node`, not by a rollout that never ends.
package runtimeready
