package controller

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"podnet.io/podnet/controller/claimgc"
	"podnet.io/podnet/controller/profilestatus"
)

// Metrics are the controller's Prometheus metrics: the claim collectors'
// counters, the pools' usage and the duplicate MACs. A nil *Metrics
// records nothing.
type Metrics struct {
	GC    *claimgc.Metrics
	Pools *profilestatus.Metrics
	macs  *duplicateMACs
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
	macs := &duplicateMACs{vec: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "podnet_controller_duplicate_macs",
		Help: "MACs that more than one pod interface of the network holds (bridge, macvlan and host-device interfaces, as the agents report them); every replica reports it from its pod cache.",
	}, []string{"network"})}
	if err := reg.Register(macs); err != nil {
		return nil, fmt.Errorf("register podnet_controller_duplicate_macs: %w", err)
	}
	return &Metrics{GC: gc, Pools: pools, macs: macs}, nil
}

// duplicateMACs is a collector of one gauge per network with duplicate
// MACs, read from the pod cache at each scrape.
type duplicateMACs struct {
	vec  *prometheus.GaugeVec
	mu   sync.Mutex
	read func() map[string]int
}

func (d *duplicateMACs) from(read func() map[string]int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.read = read
}

func (d *duplicateMACs) Describe(ch chan<- *prometheus.Desc) { d.vec.Describe(ch) }

func (d *duplicateMACs) Collect(ch chan<- prometheus.Metric) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.vec.Reset()
	if d.read != nil {
		for network, n := range d.read() {
			d.vec.WithLabelValues(network).Set(float64(n))
		}
	}
	d.vec.Collect(ch)
}
