// Package nri is the agent's NRI plugin (containerd 2, CRI-O): it holds a
// podnet pod's containers until the networks its approval lists exist in
// the pod's network namespace, without the wait init container and
// without chaining a CNI plugin.
//
// At RunPodSandbox of a pod carrying an approval the plugin starts the
// attach as the chained CNI plugin's request does
// (sandbox.Handshake.StartFromRuntime: the pod found in the node-local
// cache, its approval's signature, its netns checked against the
// runtime's record of the sandbox, which the event itself is) and returns
// at once: the runtime calls every plugin of a
// node under one lock, so work done inside the call would serialize a
// burst of pods. At CreateContainer of any of the pod's containers the
// plugin awaits the attach's answer for a bounded time (--nri-create-wait,
// below NRI's own 2 s request timeout) and then looks into the netns
// itself: when an approved interface is missing the call fails with an
// error naming the pod and the interfaces, the kubelet retries, and the
// next CreateContainer awaits again. Only pods the webhook chose NRI to
// hold (NRI's required-plugins annotation names podnet's plugin) are held:
// containers of pods without an approval, or held by the wait init
// container or the chained CNI plugin, are never refused.
//
// NRI alone fails open: a plugin that is not connected (agent down or
// restarting) is not asked, and one that does not answer within the
// request timeout is dropped, so the runtime creates the container
// anyway. A node whose runtime runs NRI's default validator refuses a
// container that a plugin named in the pod's
// v1alpha1.NRIRequiredPluginsAnnotation did not process; but NRI counts
// the one call that reached a hung plugin (the one that timed out) as
// processed, so that container is created without its networks. What
// either way starts before the networks, the agent stops once it has
// attached them (nodehold.UnheldRestarts, --nri-restart-unheld), and the
// kubelet starts it again with them.
//
// The plugin reconnects with backoff after the runtime restarts or the
// connection drops, and registers afresh when the agent restarts. It
// reports podnet_agent_nri_hook_seconds (by hook) and
// podnet_agent_nri_connected.
package nri
