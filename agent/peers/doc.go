// Package peers keeps the flood list of every spanning (VXLAN) bridge
// network on this node in step with the cluster's nodes: each other node's
// InternalIP of the underlay's family is a peer, and the dataplane keeps
// one all-zeros FDB entry per peer (head-end replication of broadcast,
// unknown unicast and multicast).
//
// The agent learns peers from Node objects only, through an informer whose
// transform keeps a node's name, UID and InternalIP addresses: memory grows
// with the number of nodes, O(nodes) of a few hundred bytes each, and no
// agent watches pods cluster-wide. Heartbeats change nothing it keeps, so
// only a join, an address change or a leave reaches the reconciler.
//
// The decisions (which addresses are peers) are pure functions; the
// reconciler only reads the cache and calls the dataplane. It must not write to the API server.
package peers
