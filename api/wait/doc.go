// Package wait is the command line of the wait init container: what the
// webhook writes into a pod's podnet-wait container and what podnet-wait
// parses. It holds constants only and imports nothing, so the wait binary,
// which runs in every podnet pod, can share it without linking the API
// types.
package wait
