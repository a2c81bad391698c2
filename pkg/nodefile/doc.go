// Package nodefile puts a file of the agent's image onto the node, where
// something other than the agent runs it (the CNI plugin the runtime
// calls, the wait hook the runtime runs): written beside and renamed into
// place, so that a runtime running it meanwhile sees the old file or the
// new one, never half of one.
package nodefile
