// Package dataplane turns an approved per-pod network config into real
// interfaces inside the pod's network namespace and on the node, reports what
// is there, and takes it away again.
//
// It is split in two: a pure planner (plan.go, validate.go) that compares the
// observed State with the desired Pod and returns ordered Steps, and a
// netlink executor (*_linux.go) that observes and performs those steps
// through netlink handles bound to the pod's and the node's network
// namespaces.
//
// The agent uses one Dataplane per node:
//
//	d := &dataplane.Dataplane{}           // node = the agent's netns
//	st, err := d.Apply(ctx, pod)           // create / change in place / remove; idempotent
//	st, err = d.Observe(ctx, pod)          // what is in place, for network-status
//	err = d.Detach(ctx, uid, netnsPath)    // netnsPath may be "" or gone
//	removed, err := d.CollectGarbage(ctx, isLivePod)
//	steps, err := d.Plan(ctx, pod)         // what Apply would do now (dry run)
//
// Apply joins per-interface errors (each names the interface and, through
// the wrapping, the pod UID and netns path); its statuses list the desired
// interfaces that are in place.
//
// Marks, so that a restarted agent finds its own objects and nothing else:
// node veth ends are named "pn" + 13 hex digits of a hash of pod UID and
// interface and carry the ifalias "podnet:<uid>:<ifname>"; bridges podnet
// created carry "podnet:bridge"; the VLAN subinterface podnet created as
// the uplink of a VLAN network's bridge carries "podnet:vlan"; links inside
// the pod carry
// "podnet:<ifname>" and the link group 0x706e (so Detach deletes them in one
// kernel operation); routes inside the pod carry rtm_protocol 0x70.
//
// Port security: the node end of every bridge and vlan kind interface
// forwards only the pod link's own MAC, addresses and link-local addresses
// (package portsecurity: elements of shared sets in the bridge-family
// table "podnet-portsec"), unless the Interface turns it off. The rules are
// written right before the port goes up, brought up to date at the end of
// every Apply, and removed with the port (Apply, Detach, CollectGarbage,
// which also removes those of ports that went while the agent was down).
// Macvlan and ipvlan interfaces have no node-side port and get none.
//
// Network policy: an Interface's PolicyIn and PolicyOut (what may reach
// the pod through it, what it may send) are elements of the inet table
// "podnet-policy" inside the pod's netns (package portsecurity), keyed by
// the link's name there, for every kind alike. Apply writes a changed
// policy before any of the pod's links goes up, and removes the elements
// of an interface whose policy went, or that went, afterwards; it keeps a
// fingerprint per pod and link, so that an Apply with unchanged policies
// sends no nftables request. Detach removes the table; a pod that never
// had a policy never gets it (policy_linux.go).
//
// What it must not do: know anything of Kubernetes (the agent translates a
// signed approval into a Pod value); touch the node's main routing table, its
// firewall (but its own nftables table "podnet-portsec"; in pods, its own
// tables), or any node link it
// did not create. A bridge that exists without
// podnet's alias is used (ports are added) but never changed or deleted, and a
// parent NIC of macvlan, ipvlan or VLAN interfaces is never changed. Inside
// the pod only links carrying podnet's alias are changed or removed (eth0's
// MTU is the single exception, and only when asked for).
//
// VRFs (vrf.go): an Interface with a VRF is enslaved to a VRF device of
// that name inside the pod (alias "podnet:vrf", podnet's link group, so
// Detach deletes it with the links), and its routes live in the VRF's
// table; the device goes with its last interface, and one podnet did not
// create is refused, never taken over.
//
// VLAN networks: the kernel allows one 802.1Q subinterface per NIC and VLAN
// id, so the pods of a node share it. It is the uplink of a podnet bridge
// named from NIC and VLAN id ("pnvb…", the subinterface "pnvu…"), and each
// pod gets a veth into that bridge; the bridge's ports count its users, and
// bridge and subinterface go with the last pod. A subinterface of that VLAN
// that podnet did not create is refused by name, never taken over.
//
// Spanning bridge networks: an Interface with VXLAN gets one VXLAN device
// per node and bridge ("pnvx…", alias "podnet:vxlan", learning on) as a
// port of the bridge, with one all-zeros FDB entry per peer; Apply adds
// missing peers and adopts a device of the same settings, SyncPeers makes
// the peers exact. An Interface with Uplink makes that host interface a
// port of the bridge, refused when it carries an address (but IPv6
// link-local) or the node's default route. The alias of a spanning bridge
// names its spanning port ("podnet:bridge span=<name>"), so that port
// never counts as a user: the bridge goes with its last pod port, taking
// the VXLAN device along and releasing the uplink.
//
// Tunnels: a wireguard or vxlan-tunnel Interface is a device inside the
// pod with one peer outside the cluster, created through the node's
// netlink handle into the pod's netns, so that its UDP socket stays on
// the node (tunnel_linux.go says why). A WireGuard device gets a private
// key made here (it lives only in the kernel device) and its peer through
// generic netlink inside the pod's netns; the public key is read back
// from the device for the status. A new peer is set in place; a VXLAN
// tunnel's new remote or VNI recreates it. Nothing of either is left on
// the node when the pod link goes.
//
// One home per kind: what a kind is (parent, bridge, modes, VLANs, MTU
// default, recreate rule) is its entry in kinds (kinds.go), how it is
// built and read back its entry in linuxKinds (kinds_linux.go).
//
// Kernel support: bridge, veth and macvlan are needed for those kinds,
// vxlan and wireguard for the tunnel kinds;
// ipvlan (CONFIG_IPVLAN), VLAN networks (CONFIG_VLAN_8021Q) and bridge
// ports with a VLAN (CONFIG_BRIDGE_VLAN_FILTERING) are refused with an error
// naming the missing feature on kernels built without them. The root tests
// prove every kind on Debian's stock kernel in a VM (hack/kernelvm).
package dataplane
