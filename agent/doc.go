// Package agent is podnet's node agent: a controller that watches the pods
// of its own node and makes their secondary networks match the approval the
// webhook signed.
//
// For each pod it gathers inputs (the pod from a node-local cache, the
// verified approval, the sandbox's network namespace from CRI, the
// addresses from the IPAM), turns them into a dataplane.Pod with the pure
// functions of translate.go, applies it, and writes the results: the
// podnet.io/networks-ready condition, the podnet.io/network-status
// annotation and Events. A periodic sweep removes node objects of pods
// that are gone.
//
// A pod whose sandbox does not exist yet waits in a SandboxWatch: one
// node-wide CRI list per interval serves every waiting pod and wakes each
// pod's reconcile when its sandbox is READY, so a burst of new pods costs
// the runtime no more polling than one pod and never fills the workers
// with retries.
//
// Attaching at sandbox setup (opt-in, --cni-socket), podnet's chained CNI
// plugin asks over agent/cnisocket for a pod whose sandbox the runtime is
// setting up. SandboxAttach checks the request against the node-local
// cache and the approval's signature, hands the reconciler the sandbox id
// and netns path as the pod's sandbox (it is not READY, so CRI does not
// list it yet) and enqueues the pod; the usual reconcile attaches and
// answers the plugin, which then lets the runtime go on.
//
// It sees only its node: its cache holds the node's pods and IPClaims
// (CacheOptions) and refuses any other read, an attached, unchanged pod
// costs the API server nothing, and its readiness waits only for its
// node. Anything cluster-wide (freeing the claims of pods deleted while
// their agent was down, profile status) is podnet-controller's. The one
// exception is agent/peers: VXLAN networks need every node's underlay
// address, so the cache also holds Nodes trimmed to name, UID,
// InternalIPs and the VNIs each node carries (podnet.io/vxlan-vnis, the
// agent's one write outside its pods: on its own Node), from which
// resolveSpans fills a VXLAN interface's source and flood list, and the
// peer watch keeps the flood lists and the node's tunnel table
// (pkg/underlay) in step.
//
// Before it builds a verified approval, and whenever a namespace's labels
// or a NetworkProfile change, it asks pkg/policy.Revoked whether the admin
// still grants what the approval lists (namespaces as metadata and
// profiles come from its cache, read-only), and detaches what no longer
// is, with a GrantRevoked Event and condition.
//
// What it must not do: judge requests (the webhook does; it executes only
// a verified approval that is still granted, and configures nothing for a
// missing, invalid or foreign one), touch
// anything in the node's network namespace that pkg/dataplane did not
// create, or add finalizers to tenant pods (deletion is handled from delete
// events and the sweep, so a stopped agent never blocks a pod's deletion).
package agent
