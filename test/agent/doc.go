// Package agent holds the node agent's integration tests: the real
// podnet-agent binary, running with only the RBAC of
// deploy/rbac/agent, against a real kube-apiserver and etcd (envtest), a
// real containerd with its CRI plugin whose sandboxes stand in for the
// kubelet's, real network namespaces and netlink, real IPClaims and real
// Ed25519-signed approvals. The test plays the webhook (it signs the
// approvals with a key it generates) and the kubelet (it runs the pod
// sandboxes through CRI).
//
// The tests share one API server, one containerd 1.6 and the built
// commands (TestMain stops them); a test whose runtime needs options of
// its own (NRI, the chained CNI plugin, another runtime) starts its own.
// What a test makes in the API server is its own by name (its node and
// namespaces), and it leaves no sandbox in the shared runtime.
//
// It must not touch the machine's own network namespace: the node is a
// throwaway namespace passed to the agent with --host-netns.
package agent
