package controller

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestDuplicateMACsGauge: one series per network with duplicate MACs, read
// at each scrape; a network whose duplicates are gone leaves none.
func TestDuplicateMACsGauge(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	scrape := func() map[string]float64 {
		t.Helper()
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, f := range families {
			if f.GetName() != "podnet_controller_duplicate_macs" {
				continue
			}
			for _, s := range f.GetMetric() {
				out[s.GetLabel()[0].GetValue()] = s.GetGauge().GetValue()
			}
		}
		return out
	}
	if got := scrape(); len(got) != 0 {
		t.Fatalf("series before the pod cache is read: %v", got)
	}
	now := map[string]int{"data": 2, "up": 1}
	m.macs.from(func() map[string]int { return now })
	if got := scrape(); len(got) != 2 || got["data"] != 2 || got["up"] != 1 {
		t.Fatalf("scrape %v, want data 2 and up 1", got)
	}
	now = map[string]int{"up": 1}
	if got := scrape(); len(got) != 1 || got["up"] != 1 {
		t.Fatalf("scrape %v once data has none, want up only", got)
	}
}
