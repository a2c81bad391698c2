// Package nodecarry is the agent's report of what its node can carry: it
// probes its own node read-only (the links and addresses of the node's
// network namespace, the kernel's modules, the Node's InternalIPs) for the
// needs of every profile network (pkg/carry), and keeps the carry labels
// of its own Node (carry.LabelPrefix) equal to the needs it satisfies:
// it adds the ones it satisfies, removes the ones it no longer does, and
// never touches another label, another node or anything else of its Node
// (deploy/policies/agent-node-carry.yaml holds it to that).
//
// It looks again when a profile changes, when a link or address of the
// node appears or goes (a netlink subscription), when its Node changes,
// and on a slow resync (modules); probes a kick asks for start at most
// once a second (Labeler.Spacing), since every pod start adds a link to
// the node. What the node has is kept for the
// agent's reconciler (Labeler.Have), which refuses a pod bound to a node
// that cannot carry its network (NodeCannotCarry) and is told through
// Labeler.Changed when that answer may have changed, so such a pod is
// looked at again only then, never in a loop.
//
// The decision of which labels to write is pure (planLabels); the probe
// is the only part that reads the node (probe_linux.go), and it never
// changes anything there. It reads its own Node from a cache of that one
// object, so a steady node costs the API server nothing.
package nodecarry
