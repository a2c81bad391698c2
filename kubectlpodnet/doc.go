// Package kubectlpodnet is `kubectl podnet`, the operator's and tenant's view of
// podnet: why a pod is stuck (explain), what the webhook would decide for a
// request (can-i), which networks a namespace may use (networks) and how
// full the address pools are (pools).
//
// The decisions and the output are plain functions of the objects read
// (diagnose, explainPod, poolUsage, the writers), tested by tables; the
// files named api*.go only gather those objects through the API server.
// The plugin never writes: can-i is a server-side dry run. It reuses
// pkg/policy for what a namespace may use and pkg/ipam for pool sizes, so
// it never disagrees with the webhook or the allocator.
package kubectlpodnet
