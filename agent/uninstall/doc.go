// Package uninstall is the agent's part of `podnet-controller uninstall`:
// it watches the agent's own DaemonSet for the uninstall mark
// (v1alpha1.UninstallAnnotation) and, while it is on, hands every pod of the
// node to the pod reconcile, which detaches them through its usual path
// (agent.Reconciler, through its Uninstalling interface); once every pod is
// done it removes what podnet made on the node and reports it on the Node.
// A mark taken back puts the node's overlays and labels back and every pod
// is attached again.
package uninstall
