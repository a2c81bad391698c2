// Package e2e is podnet's end-to-end suite: one two-node local cluster
// (hack/localcluster), cert-manager and podnet installed from deploy/
// exactly as a user would (hack/install, i.e. `make deploy`), then an
// admin's and a tenant's steps with kubectl and checks of what they see:
// pods Ready with their interfaces, pings over IPv4 and IPv6, denials in
// ReplicaSet events, runtime attach and detach, networks that span the two
// nodes (macvlan on the data NIC, bridge uplink, VXLAN), cleanup, and
// behaviour with the webhook down. TestRootUpgrade installs the previous
// release instead (built from the commit CHANGELOG.md names, with that
// tree's own tooling) and upgrades it to the working tree with pods
// running.
//
// It must not reach around the product: nothing is created that a user
// could not create with kubectl, and nothing inside the cluster is changed
// by hand (node links are only read).
package e2e
