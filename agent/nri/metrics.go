package nri

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Hooks, the values of the hook label.
const (
	hookRunPodSandbox   = "RunPodSandbox"
	hookCreateContainer = "CreateContainer"
)

// Metrics are the plugin's Prometheus metrics. A nil *Metrics records
// nothing.
type Metrics struct {
	hook      *prometheus.HistogramVec
	refused   prometheus.Counter
	hooked    prometheus.Counter
	connected prometheus.Gauge
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		hook: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "podnet_agent_nri_hook_seconds",
			Help: "Time the agent's NRI plugin took to answer the runtime, by hook (RunPodSandbox, CreateContainer); " +
				"the runtime holds every plugin call of the node under one lock meanwhile.",
			// Between 50 and 250 ms in steps that tell a p99 near 250 ms
			// (the time a burst's container may be held) from one well below it.
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .075, .1, .15, .2, .25, .5, 1, 1.5, 2},
		}, []string{"hook"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "podnet_agent_nri_containers_refused_total",
			Help: "Containers of podnet pods the agent's NRI plugin refused because the pod's networks were not all attached; " +
				"the kubelet creates each again after its backoff, which is what delays such a pod's start.",
		}),
		hooked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "podnet_agent_nri_containers_hooked_total",
			Help: "Containers of podnet pods the agent's NRI plugin created with its wait hook because the pod's networks " +
				"were still being attached: the runtime creates each once they are (--nri-hook), without the kubelet's retry.",
		}),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "podnet_agent_nri_connected",
			Help: "1 while the agent's NRI plugin is registered with the node's runtime, else 0.",
		}),
	}
	for _, c := range []prometheus.Collector{m.hook, m.refused, m.hooked, m.connected} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) observe(hook string, since time.Time) {
	if m != nil {
		m.hook.WithLabelValues(hook).Observe(time.Since(since).Seconds())
	}
}

func (m *Metrics) refusedOne() {
	if m != nil {
		m.refused.Inc()
	}
}

func (m *Metrics) hookedOne() {
	if m != nil {
		m.hooked.Inc()
	}
}

func (m *Metrics) setConnected(on bool) {
	if m == nil {
		return
	}
	v := 0.0
	if on {
		v = 1
	}
	m.connected.Set(v)
}
