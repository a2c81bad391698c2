package wait

import "time"

// The wait init container runs
//
//	/usr/local/bin/podnet-wait --interfaces net1,net2 --timeout 5m0s
//
// and exits 0 once every listed interface exists in its own network
// namespace (the pod's), non-zero with a message naming the missing
// interfaces when the timeout passes.
const (
	// Binary is podnet-wait's path inside the wait image (and the
	// agent's, which installs it on the node for the hook below).
	Binary = "/usr/local/bin/podnet-wait"
	// InterfacesFlag lists the interface names, comma-separated.
	InterfacesFlag = "interfaces"
	// TimeoutFlag is how long to wait, as a Go duration.
	TimeoutFlag = "timeout"
	// DefaultTimeout is long enough for an image pull on a slow node,
	// short enough that a broken node shows up as a failed init container.
	DefaultTimeout = 5 * time.Minute
)

// As an OCI createRuntime hook, which the agent's NRI plugin adds to a
// container whose pod's networks are still being attached, it runs
//
//	<node path>/podnet-wait hook --interfaces net1,net2 --timeout 1m0s
//
// with the container's state on stdin, and waits the same way in the
// container's network namespace.
const HookCommand = "hook"

// CheckingAliasSuffix ends the ifalias of a pod link the agent has brought
// up but whose addresses it is still checking on the wire (a network's
// addressCheck): the link must be up to probe, and the wait goes on until
// the agent gives the link its plain alias. The agent's dataplane writes
// it and podnet-wait reads it, so both take it from here.
const CheckingAliasSuffix = ":checking"
