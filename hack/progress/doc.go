// Package progress prints what a long tool step is doing: a start line
// with the expected duration, a "still …" line at a fixed interval while it
// runs, and how long it took. `make demo` (hack/demo) and the installer
// (hack/install) use it so that no stage stays silent for more than half a
// minute. It only writes lines; it never decides anything.
package progress
