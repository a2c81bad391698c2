//go:build bench

package dataplane

import (
	"context"
	"fmt"
	"testing"
	"time"

	benchfig "podnet.io/podnet/test/bench"
)

// TestBenchAttachWireCheck attaches and detaches a pod of one bridge
// network with a dual-stack address, alternating with and without
// addressCheck.duplicates, on a segment where nobody answers (the probe's
// whole listening time is spent, as on every attach without a conflict).
// It prints both p50s and their difference: the check's cost is its
// listening time (probeCount rounds), not podnet's work.
func TestBenchAttachWireCheck(t *testing.T) {
	ctx := context.Background()
	d, _ := newNode(t)
	var on, off []time.Duration
	for i := range benchfig.Size(20, 3) {
		for _, check := range []bool{false, true} {
			_, p := newPod(t)
			p = benchPod(t, p, 1, 1, i)
			p.Interfaces[0].Addresses = append(p.Interfaces[0].Addresses, cidr(t, fmt.Sprintf("fd00:100::%x/64", i+1)))
			p.Interfaces[0].CheckDuplicates = check
			start := time.Now()
			if _, err := d.Apply(ctx, p); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			if err := d.Detach(ctx, p.UID, p.NetNS); err != nil {
				t.Fatal(err)
			}
			if check {
				on = append(on, took)
			} else {
				off = append(off, took)
			}
		}
	}
	p50on, p50off := ms(benchfig.Percentile(on, 0.5)), ms(benchfig.Percentile(off, 0.5))
	bench("attach_1_if_address_check_on_p50", p50on, "ms")
	bench("attach_1_if_address_check_off_p50", p50off, "ms")
	bench("attach_1_if_address_check_added_p50", p50on-p50off, "ms")
}
