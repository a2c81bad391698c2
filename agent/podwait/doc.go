// Package podwait is the `podnet-agent wait` init container: it blocks until
// the named interfaces exist and are up in its own network namespace (the
// pod's), so the app containers start with their networks.
//
// It runs without any privilege (reading one's own namespace's links needs
// none) and must not change anything, talk to the API server, or need
// anything but netlink. The dataplane brings an interface up only after
// its addresses are in place, so "up" means "addressed" too; its routes are
// added right after, in the same apply, before the kubelet can start the
// next container.
package podwait
