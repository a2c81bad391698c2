// Package podwait is the wait init container: it blocks until the named
// interfaces exist and are up in its own network namespace (the pod's), so
// the app containers start with their networks. Run is the whole command,
// shared by the small podnet-wait binary the webhook injects and by
// `podnet-agent wait`.
//
// It runs without any privilege (reading one's own namespace's links needs
// none) and must not change anything, talk to the API server, or need
// anything but netlink. It reads links with a raw RTM_GETLINK dump and
// imports only the standard library and golang.org/x/sys/unix, so that the
// binary in every podnet pod stays small; test/layering holds it to that.
// The dataplane brings an interface up only after its addresses are in
// place, so "up" means "addressed" too. Routes are added right after
// bringing the link up, in the same apply; the wait does not check them
// (it is not told which routes to expect), so in theory an app could start
// in that gap of a few microseconds.
package podwait
