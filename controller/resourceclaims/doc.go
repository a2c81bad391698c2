// Package resourceclaims is podnet-controller's release of DRA
// ResourceClaims (ClaimRelease): an allocated resource claim holding
// podnet.io devices that no agent will prepare (its namespace is not opted
// in, or it has no approval) gets its allocation and reservations cleared
// once its pods waited, bound and never started, for the grace period, so
// that it does not hold the node's devices.
package resourceclaims
