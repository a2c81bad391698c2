package claimgc

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the counters of the claim collectors. A nil *Metrics
// records nothing.
type Metrics struct {
	deleted prometheus.Counter
	forged  prometheus.Counter
	checked prometheus.Counter
	errors  prometheus.Counter
	swept   prometheus.Counter
}

// NewMetrics creates the counters and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		deleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "podnet_ipclaim_gc_deleted_total",
			Help: "IPClaims deleted because their pod was gone.",
		}),
		forged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "podnet_ipclaim_gc_forged_total",
			Help: "IPClaims deleted because their pod lives but cannot hold them (another node, namespace or interface than the pod's: made by a compromised or misconfigured agent).",
		}),
		checked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "podnet_ipclaim_gc_live_checks_total",
			Help: "Live reads of a pod that the cache said was gone.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "podnet_ipclaim_gc_errors_total",
			Help: "Failed collections (live read or delete).",
		}),
		swept: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "podnet_ipclaim_gc_swept_total",
			Help: "IPClaims looked at by the collector's sweeps of its caches (on start and every --gc-period).",
		}),
	}
	for _, c := range []prometheus.Collector{m.deleted, m.forged, m.checked, m.errors, m.swept} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) gcDeleted() {
	if m != nil {
		m.deleted.Inc()
	}
}

func (m *Metrics) gcForged() {
	if m != nil {
		m.forged.Inc()
	}
}

func (m *Metrics) gcChecked() {
	if m != nil {
		m.checked.Inc()
	}
}

func (m *Metrics) gcError() {
	if m != nil {
		m.errors.Inc()
	}
}

func (m *Metrics) gcSwept(n int) {
	if m != nil {
		m.swept.Add(float64(n))
	}
}
