// Package peers keeps the flood list of every spanning (VXLAN) bridge
// network on this node in step with the cluster's nodes, and locks the
// node's side of those overlays: a peer of a network is another node that
// carries it (its Node lists the VNI in podnet.io/vxlan-vnis) and whose
// InternalIP of the underlay's family is an address the network allows
// (policy.CheckUnderlayAddress: never loopback, unspecified, multicast or
// link-local; inside the profile's underlay.cidrs when it declares them).
// The dataplane keeps one all-zeros FDB entry per peer (head-end
// replication of broadcast, unknown unicast and multicast), and the
// node's nftables table (pkg/underlay) accepts each VNI's packets only
// from its peers.
//
// The agent learns peers from Node objects only, through an informer whose
// transform keeps a node's name, UID, InternalIP addresses and its VNI
// annotation: memory grows with the number of nodes, O(nodes) of a few
// hundred bytes each, and no agent watches pods cluster-wide. Heartbeats
// change nothing it keeps, so only a join, an address change, a change of
// the VNIs a node carries or a leave reaches the reconciler.
//
// The only write to the API server is this node's own VNI annotation, and
// only when the set of VNIs it carries changes (a network's first pod on
// the node, or its last one gone).
//
// The decisions (which addresses are peers) are pure functions; the
// reconciler reads the cache, calls the dataplane and writes the table.
package peers
