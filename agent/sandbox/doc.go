// Package sandbox is the agent's half of the sandbox handshake: how a
// pod's sandbox is found while the runtime sets it up or right after, so
// that the reconcile attaches into it.
//
// A pod whose sandbox does not exist yet waits in a Watch: one node-wide
// CRI list per interval serves every waiting pod and wakes each pod's
// reconcile when its sandbox is READY, so a burst of new pods costs the
// runtime no more polling than one pod and never fills the workers with
// retries.
//
// Attaching at sandbox setup (opt-in, --cni-socket), podnet's chained CNI
// plugin asks over cnisocket for a pod whose sandbox the runtime is
// setting up. Handshake checks the request against the node-local cache
// and the approval's signature, and its netns against the runtime's own
// record of that sandbox (cri.Resolver.SandboxByID: made for this pod,
// with this very namespace; never the node's or the agent's own), hands
// the reconcile the sandbox id and netns path as the pod's sandbox (it is
// not READY, so CRI does not list it yet) and enqueues the pod; the usual
// reconcile attaches and answers the plugin, which then lets the runtime
// go on. The agent's NRI plugin (agent/nri, --nri-socket) starts the same
// attach through the same path at RunPodSandbox
// (Handshake.StartFromRuntime, a Ticket: the event, sent by the runtime
// over the socket the agent dialled, is the runtime's record of the
// sandbox, so CRI is not asked again), and awaits the Ticket's answer
// when the pod's containers are created.
//
// The reconcile sees this room through its own interfaces
// (agent.SandboxSetups, agent.SandboxPoll); the room imports no other
// room of the agent, only its vocabulary (agent/podstate). A pod's
// resource claims reach it as a Verifier that merges them in and a
// Claimed check (dra.ClaimNetworks), wired in cmd/podnet-agent.
package sandbox
