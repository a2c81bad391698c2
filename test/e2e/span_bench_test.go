//go:build bench

package e2e

import (
	"fmt"
	"os"
	"testing"

	"podnet.io/podnet/test/bench"
)

// TestBenchSpan measures the overlay's first ping and the round-trip
// times of benchSpan on a two-node local cluster of its own with podnet
// installed. make test runs it at its smallest size inside TestRootE2E
// (NetworksSpanNodes/BenchSmoke), on that suite's cluster.
func TestBenchSpan(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the bench runs a local cluster (network namespaces, kubelet): run it as root")
	}
	fmt.Fprintln(os.Stderr, "TestBenchSpan: bringing up the two-node cluster and podnet (about 2 min)")
	s := setUp(t)
	s.testAdmin(t)
	s.apply(t, spanProfile)
	s.benchSpan(t, bench.Size(3, 1), bench.Size(30, 3))
}
