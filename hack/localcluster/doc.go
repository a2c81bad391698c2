// Package localcluster brings up and tears down a Kubernetes cluster made of
// real components (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, containerd, kubelet, kube-proxy) on this machine, for
// podnet's integration and end-to-end tests and for `make cluster-up`.
//
// The whole cluster lives in network namespaces of its own: the control
// plane and node 1 run in netns pn-<name>, a second node in pn-<name>-n2,
// joined by a veth pair whose both ends live in those namespaces (the
// underlay: node addresses, pod routes, VXLAN), and by a second pair, each
// node's data NIC (DataNIC, no addresses), so that networks built on a host
// NIC — macvlan, ipvlan, VLAN, a bridge's uplink — span the two nodes. The
// machine's own network namespace is never changed: host-side clients reach
// the API server through a loopback forwarder process that dials into the
// cluster netns. Every piece of state (PKI, configs, data, logs, PIDs) lives
// in _output/cluster/<name>/ and every netns, interface and socket name
// carries the cluster name, so two clusters can run side by side.
//
// containerd unpacks images with the overlayfs snapshotter, as real
// clusters do, when an overlay mount works under the cluster folder, and
// with native (a full copy of the rootfs per container) otherwise; one
// function, ChooseSnapshotter, decides for the configuration and every
// image import.
//
// The nodes run Debian's containerd 1.6 by default, containerd 2
// (Options.Runtime RuntimeContainerd2) built from its Go module by
// hack/containerd2 with its own runc shim and Debian's runc, in its own
// configuration format, or CRI-O (RuntimeCRIO) built from its Go module by
// hack/crio with Debian's conmon and runc (through bundlefit); both with
// NRI on and each node's NRI socket in the node's folder (NodeNRISocket).
// Each runtime is one registration (runtime.go): how it is built, run,
// configured and given images, and what it leaves outside the folder.
//
// It must not pull images (pods use imported images only), change the
// machine's own netns, or stop a process it did not record or that does not
// serve its runtime. Outside its folder it only leaves what the runtime
// keeps machine-wide while pods run — pod namespaces pinned under /var/run
// (netns; CRI-O's ipc and uts too), the CNI result cache, shim sockets,
// kubelet's /var/log/containers links, a CRI-O node's storage in
// _output/runtime-storage — and Down removes those of its own cluster.
package localcluster
