// Package attachment reads a pod's approved interfaces as the components
// that judge pods by them need them: each interface's network, profile,
// address space and, from the agent's network-status, its MAC and
// addresses. podnet-controller's pod cache keeps what it reads, and the
// kubectl plugin reads pods the same way, so that both judge a network's
// pods by one reading.
package attachment
