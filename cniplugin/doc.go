// Package cniplugin is podnet's chained CNI plugin (binary podnet-cni,
// installed as "podnet" in the node's CNI bin folder): it runs last in the
// node's conflist, inside the runtime's RunPodSandbox, and holds a podnet
// pod's sandbox setup until the node agent has attached the pod's
// networks in it. The pod's app then starts with its interfaces, without a
// wait init container.
//
// ADD reads the pod's annotations from the runtime config the runtime
// passes when the plugin declares the io.kubernetes.cri.pod-annotations
// capability (containerd 1.6 does: pkg/cri/server/sandbox_run.go,
// cniNamespaceOpts). A pod without podnet's approval annotation is passed
// through at once, without the agent, so plain pods never depend on
// podnet. For the others it asks the agent over its unix socket
// (cnisocket) and prints the previous result unchanged once the
// agent answers that the networks are ready; otherwise it fails with the
// agent's reason, the runtime fails the sandbox and the kubelet retries:
// the pod waits, it never starts half-networked.
//
// DEL succeeds at once (the agent detaches on pod deletion through its
// watch), CHECK passes, VERSION lists the versions with prevResult.
//
// What it must not do: change the sandbox or the result. It decides
// nothing about a pod beyond "has an approval or not"; the agent verifies.
package cniplugin
