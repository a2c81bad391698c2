package profilestatus

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the gauges of pool usage. A nil *Metrics records nothing.
type Metrics struct {
	inUse     *prometheus.GaugeVec
	available *prometheus.GaugeVec
}

// NewMetrics creates the gauges and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		inUse: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "podnet_pool_addresses_in_use",
			Help: "Addresses of a pool held by IPClaims.",
		}, []string{"network", "pool"}),
		available: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "podnet_pool_addresses_available",
			Help: "Usable addresses of a pool that no IPClaim holds (capped at 2^62).",
		}, []string{"network", "pool"}),
	}
	for _, c := range []prometheus.Collector{m.inUse, m.available} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) setPool(network, pool string, inUse, available int64) {
	if m != nil {
		m.inUse.WithLabelValues(network, pool).Set(float64(inUse))
		m.available.WithLabelValues(network, pool).Set(float64(available))
	}
}
