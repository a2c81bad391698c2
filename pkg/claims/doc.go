// Package claims is the engine both of podnet's allocators stand on: the
// address allocator (pkg/ipam, IPClaims) and the MAC allocator
// (pkg/macpool, MACClaims). (A DRA ResourceClaim is another thing:
// agent/dra.)
//
// A claim is a cluster-scoped object named after what it holds (an
// address in its space, a MAC, a quota slot), so the API server's
// uniqueness of names is the only lock: creating the claim takes the
// thing, and an AlreadyExists answer says who has it (Create). Every
// allocator keeps a Ledger of what it did that its informer cache may not
// show yet: the claims it created and has not released, so a release
// finds them before the cache does, and the claims it deleted, for a
// while (tombstones), so a lagging cache never hands one back (Mine);
// and how far each interface's fruitless walks went, so the next attempt
// tries other names (ResumeAt). The memory only ever saves requests: a
// restarted allocator finds everything in the API server.
//
// What differs between kinds (how a claim names its holder, whether it is
// a quota slot) is a Kind; the allocators keep what is theirs: the
// address and MAC arithmetic, pools, quotas, the reclaim of a dead pod's
// claim and the takeover of a StatefulSet pod's.
package claims
