// Package cristop lists the running containers of one pod sandbox with
// their start times, and stops one container, through the container
// runtime's CRI API (k8s.io/cri-api v1).
//
// It is the one place where podnet changes anything in the runtime: the
// agent stops a container of a pod held by NRI that the runtime started
// before the pod's networks existed (the runtime let it through while the
// agent's NRI plugin was hung or away), so that the kubelet starts it again
// with its networks. What to stop is decided elsewhere (agent's pure
// decision); this package only asks and acts.
//
// What it must not do: create, start or remove containers or sandboxes, or
// touch a container of another sandbox or pod: every listed container is
// checked against the sandbox and the pod UID the caller names, since a
// runtime may ignore the request's filter.
package cristop
