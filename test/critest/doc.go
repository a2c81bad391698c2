// Package critest starts a real container runtime for tests: its own
// root, state, runc root and socket in a temporary folder, running in a
// throwaway network namespace with a bridge CNI configuration confined to
// that namespace, and the pause image imported. Tests then run and remove
// pod sandboxes through the real CRI API, as the kubelet would. It runs
// Debian's containerd 1.6, containerd 2 or CRI-O (Options.Runtime;
// Runtimes lists all three, so CRI tests run on each), configured as the
// local cluster's nodes are (localcluster.RuntimeConfig).
//
// It is for tests only. It must not touch the machine's own network
// namespace, the machine's containerd, or any process it did not start;
// everything it creates is removed when the test ends (a runtime the
// tests share, SharedWith: its sandboxes when each test ends, the rest
// when the test binary's tests end).
package critest
