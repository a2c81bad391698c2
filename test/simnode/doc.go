// Package simnode runs podnet agents without nodes, for the envtest
// regression tests and the scale bench: each simulated node is the real
// agent (its reconciler, its allocator, its node-scoped cache and its
// manager) with its own client, user agent and a Counter on its transport,
// and only the node seams faked: a sandbox exists for every pod, and the
// dataplane reports the interfaces it is asked for without touching a
// network namespace. A fake kubelet (Kubelet) plays the node's part in the
// pod's life: it marks pods Running, reports their IPs and finishes deleting
// them.
//
// It must not be used by product code (product folders never import test/).
package simnode
