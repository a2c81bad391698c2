package nodehold

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"podnet.io/podnet/pkg/nriprobe"
)

type fixedProber nriprobe.Result

func (f fixedProber) Probe(context.Context) (nriprobe.Result, error) { return nriprobe.Result(f), nil }

// TestNRIProbeReports: each kick probes and reports the answer, which
// NodeHolds reads (Enforced) and the metric shows; without a prober the
// agent reports unknown once, so that an earlier answer does not stay.
func TestNRIProbeReports(t *testing.T) {
	reported := make(chan nriprobe.Result, 4)
	report := func(_ context.Context, r nriprobe.Result) error { reported <- r; return nil }
	reg := prometheus.NewRegistry()
	p, err := NewNRIProbe(reg, fixedProber(nriprobe.Enforced), report, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if p.Enforced() {
		t.Fatal("enforced before any probe")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = p.Start(ctx) }()
	p.Kick()
	if r := <-reported; r != nriprobe.Enforced || !p.Enforced() {
		t.Fatalf("reported %q, Enforced() = %v; want enforced, true", r, p.Enforced())
	}
	got := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	if w := map[string]float64{"enforced": 1, "unenforced": 0, "unknown": 0}; !maps.Equal(got, w) {
		t.Errorf("podnet_agent_nri_validator %v, want %v", got, w)
	}

	none, err := NewNRIProbe(prometheus.NewRegistry(), nil, report, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if err := none.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-reported:
		if r != nriprobe.Unknown {
			t.Errorf("without a prober: reported %q, want unknown", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("without a prober: nothing reported")
	}
	var nilProbe *NRIProbe
	if nilProbe.Enforced() {
		t.Error("a nil NRIProbe is enforced")
	}
}
