// Package underlay locks the node side of podnet's tunnels: a tunnel's
// packets (a protocol and port, and for a segmented tunnel such as VXLAN
// the segment's identifier in its header) are accepted on the node only
// from the underlay addresses of its peer nodes, and the node forwards no
// packet to a peer's tunnel port, so a pod can neither inject frames into
// an overlay directly nor through the node's masquerading.
//
// Plan is pure: tunnels in, a Ruleset out (sets of allowed addresses and
// drop rules), with table tests. Table applies a Ruleset to one nftables
// table of its own (inet family, named TableName) in the node's network
// namespace, replacing the whole table in one atomic transaction, so that
// an agent restart finds and rewrites it and no packet ever sees a half
// table; an empty Ruleset removes the table. It never reads, changes or
// deletes any other table, chain or set.
//
// A pod's point-to-point VXLAN tunnel to an endpoint outside the cluster
// is one more tunnel (PointToPoint): its port and VNI accept packets only
// from the endpoint. A node has one VXLAN device per port and VNI, so
// Reserve gives each such key to one holder (a pod or a spanning bridge)
// before its device is made, naming the holder when it refuses another,
// and PointToPointLocks never puts a second lock on a key.
package underlay
