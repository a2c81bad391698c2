package v1alpha1

// Taking podnet off a cluster is an explicit step before its objects are
// deleted (pkg/uninstall, `podnet-controller uninstall`): deleting the
// agent's DaemonSet cannot be the signal, since its ServiceAccount and RBAC
// go at the same moment and an agent restart or upgrade must never wipe the
// pods' networks.
const (
	// UninstallAnnotation on the agent's DaemonSet is the uninstall mark:
	// while it is there, every agent refuses new attaches, detaches every
	// podnet network from the pods of its node, removes what podnet made
	// on the node and reports AgentUninstalledAnnotation. Its value names
	// one uninstall run (the time it began); removing it makes the agents
	// attach again.
	UninstallAnnotation = "podnet.io/uninstall"

	// AgentUninstalledAnnotation on a Node says that the node's agent has
	// removed everything podnet made there, for the DaemonSet whose UID
	// is its value. Only that node's agent may set it
	// (ValidatingAdmissionPolicy podnet-agent-node-vnis); the uninstall
	// step removes it at the end.
	AgentUninstalledAnnotation = "podnet.io/agent-uninstalled"
)
