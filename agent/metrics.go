package agent

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the agent's Prometheus metrics. A nil *Metrics records
// nothing, so unit tests need none.
type Metrics struct {
	attach     prometheus.Histogram
	apply      prometheus.Histogram
	pods       prometheus.Gauge
	interfaces prometheus.Gauge
	errors     *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (the
// controller-runtime registry in the binary, so /metrics serves them next
// to the controller's own).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		attach: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "podnet_agent_attach_seconds",
			Help:    "Time from the pod sandbox's creation to its networks being ready, once per sandbox.",
			Buckets: []float64{.025, .05, .1, .15, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		apply: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "podnet_agent_apply_seconds",
			Help:    "Duration of one dataplane apply of a pod's networks.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}),
		pods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "podnet_agent_pods",
			Help: "Pods on this node with podnet interfaces.",
		}),
		interfaces: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "podnet_agent_interfaces",
			Help: "podnet interfaces in pods on this node.",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "podnet_agent_errors_total",
			Help: "Failures by reason (InvalidApproval, IPAMFailed, AttachFailed, DetachFailed, cri, sweep).",
		}, []string{"reason"}),
	}
	for _, c := range []prometheus.Collector{m.attach, m.apply, m.pods, m.interfaces, m.errors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) observeAttach(d time.Duration) {
	if m != nil {
		m.attach.Observe(d.Seconds())
	}
}

func (m *Metrics) observeApply(d time.Duration) {
	if m != nil {
		m.apply.Observe(d.Seconds())
	}
}

func (m *Metrics) setManaged(pods, interfaces int) {
	if m != nil {
		m.pods.Set(float64(pods))
		m.interfaces.Set(float64(interfaces))
	}
}

func (m *Metrics) error(reason string) {
	if m != nil {
		m.errors.WithLabelValues(reason).Inc()
	}
}
