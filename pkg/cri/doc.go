// Package cri finds the network namespace of a pod through the container
// runtime's CRI API (k8s.io/cri-api v1 over its gRPC unix socket): the READY
// sandbox labelled with the pod's UID, then the network namespace path from
// the sandbox's verbose status, and from the same status the addresses of
// the pod's default network (status.network.ip and additional_ips).
//
// Both containerd (1.6 and later) and CRI-O answer PodSandboxStatus with
// Verbose set by putting one JSON document under the "info" key of the
// response's Info map. Its shape, in the parts read here, is the same:
//
//	{"pid": 4242, "runtimeSpec": {"linux": {"namespaces": [
//	    {"type": "network", "path": "/var/run/netns/cni-…"}, …]}}}
//
// containerd writes the path of the namespace it created for the pod
// (/var/run/netns/cni-…); CRI-O writes its pinned namespace
// (/var/run/netns/<uuid>) under the same keys, next to "image". A sandbox
// that a restarted containerd 2 recovered may report no spec; containerd's
// stored record of it ("sandboxMetadata", kept across restarts) still names
// the namespace. When neither does (a runtime that lets runc create the
// namespace), /proc/<pid>/ns/net of the sandbox's first process is used
// instead, which needs the caller to share the node's PID namespace (the
// agent does not; podnet-cni, run by the runtime, does).
//
// SandboxByID reports what the runtime recorded of one sandbox (the pod UID
// label and the network namespace path), also while the sandbox is being
// set up: containerd 1.6 lists a sandbox through CRI only after its CNI
// plugins ran, but its own containers service (on the same socket,
// namespace "k8s.io") holds the sandbox's container, labels and spec, from
// before. Those two messages are encoded by hand with protowire, so this
// package needs no containerd module.
//
// What it must not do: create, change or stop anything in the runtime. It only
// reads; the kubelet owns every sandbox.
package cri
