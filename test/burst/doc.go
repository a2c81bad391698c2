// Package burst measures podnet under a burst of pods on the project's
// local cluster (hack/localcluster: real kube-apiserver, scheduler,
// controller-manager, kubelet and containerd 2 with NRI on, with
// cert-manager, the webhook, the controller and the agent installed from
// deploy/ as `make demo` does): Deployments of N pods created at once,
// alternating in one run between arms: without networks, with one and
// two podnet networks, and with one and two Multus networks; and two arms
// paced at a pod every 500 ms, without networks and with one podnet
// network, where the node stays well below busy and an app's start delay
// is podnet's work rather than a queue for the CPUs (the Multus
// thin plugin built from its Go module at test/multusdiff's version, made
// the node's primary CNI plugin for those arms only, delegating to the
// node's own network and to NetworkAttachmentDefinitions of the reference
// bridge plugin with host-local IPAM).
//
// TestBenchClusterBurst (build tag bench, run by `make bench`) prints per
// N and arm the all-Ready time and its ratio to the arm without networks
// and, for podnet, to Multus with as many networks; the app container's
// start delay p50 and p99; the pods whose app started before all their
// interfaces existed (from the app's first command: must be 0); sandbox →
// networks-ready percentiles, the agent's API requests per pod start and,
// in NRI mode, its NRI hook times; the pods that could not be scheduled;
// and where each pod's start time goes (scheduler, kubelet and
// containerd, agent, wait init container and app start); and each arm's
// node_busy, the node's CPU time over the arm as a share of its CPUs. A
// paced arm's ratios and delays are set against the paced arm without
// networks. It asserts no figure.
//
// It only measures and prints; it brings its cluster up and down itself
// (named after the e2e slot it holds, PODNET_E2E_CLUSTER, else "burst").
package burst
