// Package agent is podnet's node agent: a controller that watches the pods
// of its own node and makes their secondary networks match the approval the
// webhook signed.
//
// For each pod it gathers inputs (the pod from a node-local cache, the
// verified approval, the sandbox's network namespace from CRI, the
// addresses from the IPAM), turns them into a dataplane.Pod with the pure
// functions of translate.go, applies it, and writes the results: the
// podnet.io/networks-ready condition, the podnet.io/network-status
// annotation and Events. An attach runs in named phases (attach_phases.go:
// judge, claim, resolve, plan, apply); how it ended is one outcome, from
// which one report writes the condition, the network-status, the Event
// (chosen by the pure eventFor) and the metrics. A periodic sweep removes
// node objects of pods that are gone.
//
// Beside the reconcile stand rooms of their own, each seen through a
// small interface of this package: agent/sandbox (the sandbox handshake:
// the poll for new sandboxes, and the requests of the chained CNI plugin
// and NRI at sandbox setup; SandboxSetups, SandboxPoll), agent/dra (the
// resource claims of podnet's DRA driver; ResourceClaims),
// agent/nodehold (the node's half of holding a pod: the hold check, the
// node's hold label, the NRI probe, the restart of containers NRI let
// through; HoldJudge, UnheldStops) and agent/uninstall (Uninstalling).
// The node's own jobs stand beside them: agent/nri (the NRI plugin,
// which starts an attach through agent/sandbox's Handshake),
// agent/nodecarry (the labels that say what the node can carry; the
// reconcile asks NodeCarry), agent/runtimeready (the readiness check that
// the runtime answers on the agent's CRI endpoint, and the Node Event
// when it does not) and agent/peers (below). All of them stand
// on agent/podstate, the words for a pod's state, and none imports
// another (test/layering).
//
// TrustedKeys makes a broken file of the webhook's public keys visible
// (readiness, metrics, a log line) while the last good keys it still lists
// stay trusted.
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
// (pkg/underlay) in step. A pod's point-to-point VXLAN tunnels join that
// table too (lockTunnels, before the device exists; unlocked on detach).
//
// Before it builds a verified approval, and whenever a namespace's labels
// or a NetworkProfile change, it asks pkg/policy.Revoked whether the admin
// still grants what the approval lists, as the webhook's own resolution
// judges it now (namespaces as metadata and profiles come from its cache,
// read-only), and builds policy.Narrow of the two: what the admin narrowed
// in place (lower MTU, fewer routes, no default route) is changed on the
// running interface, with a GrantNarrowed Event and condition; what
// cannot change in place is detached, with GrantRevoked. The signed
// approval stays the upper bound: a profile widened again gives back what
// it signs, never more.
//
// Before that, it checks the pod's spec against what the approval assumes
// (pkg/policy.ValidatePodPrivilege, the webhook's check too): a pod that
// carries an approval the webhook never judged on it (copied through a
// Binding, say) and holds NET_ADMIN, SYS_ADMIN, NET_RAW on a network
// without raw sockets, or a hostPath to the agent's folder, gets nothing,
// with a PrivilegedPod Event and condition naming container and
// capability.
//
// Network policy (nodepolicy.go): podnet-controller writes the verdicts
// of the node's pod interfaces into the node's NodePolicy; the agent
// caches that one object only, keeps it parsed, requeues the pods whose
// interfaces' policies it changes, and gives each desired interface its
// policy: the NodePolicy's entry, else, in a direction its network's
// policyFloor isolates, nothing allowed (fail closed until the
// controller's verdict arrives). pkg/dataplane writes it into the pod's
// netns before the links go up. Where the API server serves no
// NodePolicies (WatchNodePolicy), the floors alone apply.
//
// What it must not do: judge requests (the webhook does; it executes only
// a verified approval that is still granted, and configures nothing for a
// missing, invalid or foreign one), touch
// anything in the node's network namespace that pkg/dataplane did not
// create, or add finalizers to tenant pods (deletion is handled from delete
// events and the sweep, so a stopped agent never blocks a pod's deletion).
package agent
