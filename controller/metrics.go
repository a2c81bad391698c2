package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	"podnet.io/podnet/controller/claimgc"
	"podnet.io/podnet/controller/profilestatus"
)

// Metrics are the controller's Prometheus metrics: the claim collectors'
// counters and the pools' usage. A nil *Metrics records nothing.
type Metrics struct {
	GC    *claimgc.Metrics
	Pools *profilestatus.Metrics
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	gc, err := claimgc.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	pools, err := profilestatus.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Metrics{GC: gc, Pools: pools}, nil
}
