//go:build bench

package dataplane

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	benchfig "podnet.io/podnet/test/bench"
)

// TestBenchAttachByNodeSize attaches and detaches a pod of one bridge
// network, with port security, on three nodes that already hold 2, 250
// and 1,000 secured ports (pods of two networks each), in turn so that
// all see the same load. Port security's state is shared sets, so an
// attach should cost the same on each: it prints the attach p50 at each
// size, the ratio of 1,000 ports to 2 and the log-log slope between them
// (0: no growth; 1: linear in the ports on the node).
func TestBenchAttachByNodeSize(t *testing.T) {
	ctx := context.Background()
	sizes := []int{2, benchfig.Size(250, 10), benchfig.Size(1000, 20)}
	nodes := make([]*Dataplane, len(sizes))
	for i, ports := range sizes {
		d, _ := newNode(t)
		for k := range ports / 2 {
			_, p := newPod(t)
			if _, err := d.Apply(ctx, benchPod(t, p, 2, 2, k)); err != nil {
				t.Fatal(err)
			}
		}
		nodes[i] = d
	}
	took := make([][]time.Duration, len(sizes))
	for i := range benchfig.Size(80, 3) {
		for n, d := range nodes {
			took[n] = append(took[n], probeAttach(t, d, 2000+i))
		}
	}
	p50 := make([]float64, len(sizes))
	for n, ports := range sizes {
		p50[n] = ms(benchfig.Percentile(took[n], 0.5))
		bench(fmtName("attach_1_if_%d_ports_p50", ports), p50[n], "ms")
		bench(fmtName("attach_1_if_%d_ports_p99", ports), ms(benchfig.Percentile(took[n], 0.99)), "ms")
	}
	last := len(sizes) - 1
	bench(fmtName("attach_1_if_%d_vs_2_ports_p50", sizes[last]), p50[last]/p50[0], "x")
	bench("attach_1_if_node_size_loglog_slope", math.Log(p50[last]/p50[0])/math.Log(float64(sizes[last])/float64(sizes[0])), "slope")
}

func fmtName(format string, n int) string { return fmt.Sprintf(format, n) }
