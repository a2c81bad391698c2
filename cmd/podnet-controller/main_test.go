package main

import (
	"strings"
	"testing"
	"time"
)

// TestValidateFlagsStatusBatch: a batch outside 0..1m is refused, naming
// the flag and the bound.
func TestValidateFlagsStatusBatch(t *testing.T) {
	ok := flags{grace: time.Minute, period: 10 * time.Minute, qps: 50, burst: 100, leaderElect: true, leaseNS: "podnet-system"}
	for _, batch := range []time.Duration{0, 2 * time.Second, time.Minute} {
		f := ok
		f.statusBatch = batch
		if err := validateFlags(f); err != nil {
			t.Errorf("--profile-status-batch %s: %v", batch, err)
		}
	}
	for _, batch := range []time.Duration{-time.Second, time.Minute + time.Second} {
		f := ok
		f.statusBatch = batch
		err := validateFlags(f)
		if err == nil || !strings.Contains(err.Error(), "--profile-status-batch") || !strings.Contains(err.Error(), "between 0 and 1m") {
			t.Errorf("--profile-status-batch %s: err = %v, want one naming the flag and its bounds", batch, err)
		}
	}
}
