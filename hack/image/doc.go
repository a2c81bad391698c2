// Package image builds podnet's container images from files on disk, without
// a Docker engine and without a registry: the webhook, agent, wait and
// controller images from their static binaries (ComponentSpecs), the pause
// image containerd uses as its sandbox, and a busybox image for test
// workloads. Images are written as docker-save
// tarballs that `ctr images import` (containerd 1.6) accepts, or pushed to a
// real registry.
//
// Every image name podnet uses is a constant here, so the local cluster,
// the deploy manifests and the tests agree on them.
//
// EnsureTestImages is the entry point for test harnesses: it builds the
// pause program with `go build` and writes the pause and busybox tarballs.
// Import them with `ctr -n k8s.io images import --snapshotter <name> <tar>`
// where name is the snapshotter containerd's CRI uses (the local cluster's
// is chosen by localcluster.ChooseSnapshotter, and its ImportImage passes
// it).
//
// This package must not run containers, talk to containerd, or reach a
// registry except when asked to push. Builds are deterministic (fixed file
// times and owners), so rebuilding an unchanged image gives the same digest.
package image
