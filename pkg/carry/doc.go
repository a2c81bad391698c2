// Package carry decides which nodes can carry a profile network: the one
// rule that the webhook (placing pods), the agent (labelling its Node and
// refusing a pod bound to a node that cannot carry its network) and the
// DRA code (publishing a node's devices) share.
//
// A network needs things of a node (Needs): a host link by name (a
// macvlan, ipvlan or VLAN master, a bridge uplink, a VXLAN or tunnel
// local interface), an address the node owns (a VXLAN or tunnel local
// address), a Node InternalIP usable as a VXLAN underlay (inside the
// profile's underlay.cidrs), and the kernel modules of its kind. Each
// need has one node label key under LabelPrefix (Need.Key): one key per
// need, never per network or per pod, so the labels on a node are bounded
// by what admins configure (NICs, addresses, modules) however many
// profiles and pods use them. A NIC name or address that is not a valid
// label name is hashed into the key.
//
// Requirements turns a network's needs and its profile nodeSelector into
// node selector requirements; RequireOnPod ANDs them into every term of a
// pod's required node affinity (never widening what the pod asked,
// idempotent). Carries and Lacks answer, for what a node has (Node), the
// same question the labels answer to the scheduler.
//
// It is pure: it reads no API object but those passed in, no file, no
// link and no clock. The agent probes its node (agent/nodecarry) and the
// webhook reads no Node at all.
package carry
