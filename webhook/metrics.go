package webhook

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count the webhook's decisions. controller-runtime already
// measures the HTTP side of every webhook path; these say what was decided.
type Metrics struct {
	decisions *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	// claims and claimLatency are the same of ResourceClaim CREATEs: a
	// family of their own, so that pod figures keep their meaning.
	claims       *prometheus.CounterVec
	claimLatency prometheus.Histogram
}

// decisionBuckets: decisions read only the cache, so most take well under
// a millisecond; the top buckets catch a namespace cache miss and a pod's
// reads of its claims.
var decisionBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.5}

// NewMetrics creates the metrics and registers them with reg (in the
// binary, controller-runtime's registry, served on the metrics endpoint).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "podnet_webhook_decisions_total",
			Help: "Pod admissions by operation, result (approved, denied, none, revoked, ignored, error) and granting profile (empty unless approved; an approval through two profiles counts once for each).",
		}, []string{"operation", "result", "profile"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "podnet_webhook_decision_duration_seconds",
			Help:    "Time to decide one pod admission, by operation and result.",
			Buckets: decisionBuckets,
		}, []string{"operation", "result"}),
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "podnet_webhook_claim_decisions_total",
			Help: "ResourceClaim CREATE admissions by result (approved, denied, none, ignored, error) and granting profile (empty unless approved).",
		}, []string{"result", "profile"}),
		claimLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "podnet_webhook_claim_decision_duration_seconds",
			Help:    "Time to decide one ResourceClaim CREATE.",
			Buckets: decisionBuckets,
		}),
	}
	for _, c := range []prometheus.Collector{m.decisions, m.latency, m.claims, m.claimLatency} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe records one decision; a nil Metrics records nothing.
func (m *Metrics) observe(operation, result string, profiles []string, took time.Duration) {
	if m == nil {
		return
	}
	m.latency.WithLabelValues(operation, result).Observe(took.Seconds())
	countByProfile(m.decisions, profiles, operation, result)
}

// observeClaim records one claim decision; a nil Metrics records nothing.
func (m *Metrics) observeClaim(result string, profiles []string, took time.Duration) {
	if m == nil {
		return
	}
	m.claimLatency.Observe(took.Seconds())
	countByProfile(m.claims, profiles, result)
}

// countByProfile counts one decision once for each granting profile, or
// once with an empty profile when none granted.
func countByProfile(c *prometheus.CounterVec, profiles []string, labels ...string) {
	if len(profiles) == 0 {
		c.WithLabelValues(append(labels, "")...).Inc()
		return
	}
	for _, p := range profiles {
		c.WithLabelValues(append(labels, p)...).Inc()
	}
}
