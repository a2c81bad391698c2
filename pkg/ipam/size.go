package ipam

import "net/netip"

// PoolSize is how many addresses allocation may hand out from pool (masked
// or not): the same count the allocator searches, without the network and
// broadcast addresses. A pool larger than 2^63 addresses counts as 2^63.
func PoolSize(pool netip.Prefix) uint64 {
	return usableHosts(pool.Masked()).count
}
