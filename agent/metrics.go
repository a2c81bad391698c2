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
	setup      *prometheus.HistogramVec
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
		setup: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "podnet_agent_sandbox_setup_seconds",
			Help: "Attach at sandbox setup, by step, from the CNI plugin's request: wait (the pod found and its approval verified, until a worker takes it), " +
				"addresses (IPAM), interfaces (dataplane), total (until the plugin is answered).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"step"}),
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
	for _, c := range []prometheus.Collector{m.attach, m.apply, m.setup, m.pods, m.interfaces, m.errors} {
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

// Steps of an attach at sandbox setup, the label values of
// podnet_agent_sandbox_setup_seconds.
const (
	stepWait       = "wait"
	stepAddresses  = "addresses"
	stepInterfaces = "interfaces"
	stepTotal      = "total"
)

// setupSteps times an attach that a sandbox's setup waits for, step by
// step from the CNI plugin's request. A nil *setupSteps records nothing:
// an attach no sandbox waits for is not one.
type setupSteps struct {
	m           *Metrics
	asked, last time.Time
}

// setupSteps starts timing an attach that a request made at asked
// awaits.
func (m *Metrics) setupSteps(asked time.Time, awaited bool) *setupSteps {
	if m == nil || !awaited {
		return nil
	}
	return &setupSteps{m: m, asked: asked, last: asked}
}

// step records the time since the previous step (or the request).
func (s *setupSteps) step(name string) {
	if s == nil {
		return
	}
	now := time.Now()
	s.m.setup.WithLabelValues(name).Observe(now.Sub(s.last).Seconds())
	s.last = now
}

// answered records the whole wait of the sandbox.
func (s *setupSteps) answered() {
	if s != nil {
		s.m.setup.WithLabelValues(stepTotal).Observe(time.Since(s.asked).Seconds())
	}
}
