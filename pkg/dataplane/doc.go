// Package dataplane turns an approved per-pod network config into real
// interfaces inside the pod's network namespace and on the node, reports what
// is there, and takes it away again.
//
// It is split in two: a pure planner (plan.go, validate.go) that compares the
// observed state with the desired state and returns ordered steps, and a
// netlink executor (*_linux.go) that observes and performs those steps through
// netlink handles bound to the pod's and the node's network namespaces.
//
// What it must not do: know anything of Kubernetes (the agent translates a
// signed approval into a Pod value); touch the node's main routing table, its
// firewall, or any node link it did not create. A bridge that exists without
// podnet's alias is used (ports are added) but never changed or deleted, and a
// parent NIC of macvlan, ipvlan or VLAN interfaces is never changed. Inside
// the pod only links carrying podnet's alias are changed or removed (eth0's
// MTU is the single exception, and only when asked for).
package dataplane
