// Package burst measures podnet under a burst of pods on the project's
// local cluster (hack/localcluster: real kube-apiserver, scheduler,
// controller-manager, kubelet and containerd, with cert-manager, the
// webhook, the controller and the agent installed from deploy/ as `make
// demo` does): Deployments of N pods created at once, with one and with
// two podnet networks and without any, alternating, in one run.
//
// TestBenchClusterBurst (build tag bench, run by `make bench`) prints per
// N the all-Ready time with and without networks and their ratio, sandbox
// → networks-ready percentiles, the app container's start delay, the
// agent's API requests per pod start, the pods that could not be
// scheduled, and where each pod's start time goes (scheduler, kubelet and
// containerd, agent, wait init container and app start).
//
// It only measures and prints; it brings its cluster up and down itself
// and must run alone on the machine (the shared cluster lock).
package burst
