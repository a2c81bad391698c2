// Package uninstall is the step that takes podnet off a cluster before its
// objects are deleted (`podnet-controller uninstall`, `make undeploy`, the
// Helm chart's pre-delete hook). Run puts the uninstall mark
// (v1alpha1.UninstallAnnotation) on the agent's DaemonSet, waits until the
// agent of every node that runs one reports that it detached every pod of
// its node and removed what podnet made there
// (v1alpha1.AgentUninstalledAnnotation on the Node, carrying the
// DaemonSet's UID), and then removes podnet's annotations from the Nodes.
// A timeout names the nodes that did not report; the mark then stays, so
// running the step again waits on, and removing the mark by hand makes the
// agents attach again.
//
// The agents, not this package, touch the nodes and the pods: it writes
// only the DaemonSet's annotations and the Nodes' podnet annotations, and
// reads the agent's pods. Its identity needs: daemonsets get and patch
// (the agent's, in its namespace), pods list (in that namespace), nodes
// list and patch.
//
// It must not delete any object: deleting podnet's objects (and, when the
// admin asks, its CRDs) is the caller's next step.
package uninstall
