// Package cluster holds the acceptance tests of the local cluster harness
// (hack/localcluster): bring a cluster up from nothing, run pods on it,
// exec into them, and tear it down leaving no process, mount, netns or
// interface behind. It has no code of its own and must not be imported.
package cluster
