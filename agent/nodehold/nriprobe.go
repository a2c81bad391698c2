package nodehold

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/nriprobe"
)

// Prober probes the node's runtime for NRI's default validator
// (nriprobe.Prober).
type Prober interface {
	Probe(ctx context.Context) (nriprobe.Result, error)
}

// Retries of a probe that could not tell, and of a report the API server
// did not take: from the first wait, doubling, to the longest.
const (
	probeRetryFirst = time.Second
	probeRetryMax   = 30 * time.Second
	probeTries      = 4
	// firstConnectWait is how long the agent waits for its NRI plugin's
	// first connection before it reports unknown, so that an answer of an
	// earlier agent does not stay on the Node of a runtime it cannot
	// reach.
	firstConnectWait = 30 * time.Second
)

// NRIProbe finds out whether the node's runtime runs NRI's default
// validator each time the agent's NRI plugin connects (Kick), keeps the
// answer for hold.Node.NRIValidator, exports
// podnet_agent_nri_validator{result} and reports it on the node's own
// Node (Report: Label.Set), where the controller reads every
// node's for --hold-pods=auto. Without a Prober (the agent has no
// --nri-socket) it reports unknown once, and so it does when the plugin
// has not connected within firstConnectWait, so that no answer of an
// earlier agent stays on the Node. It is a manager.Runnable.
type NRIProbe struct {
	Prober Prober
	Report func(ctx context.Context, r nriprobe.Result) error
	Log    logr.Logger

	kick chan struct{}
	last atomic.Value // nriprobe.Result
}

// NewNRIProbe returns an NRIProbe and registers its metric with reg.
func NewNRIProbe(reg prometheus.Registerer, prober Prober, report func(context.Context, nriprobe.Result) error, log logr.Logger) (*NRIProbe, error) {
	p := &NRIProbe{Prober: prober, Report: report, Log: log, kick: make(chan struct{}, 1)}
	p.last.Store(nriprobe.Unknown)
	for _, v := range v1alpha1.NodeHoldNRIValues {
		r := nriprobe.Result(v)
		g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "podnet_agent_nri_validator",
			Help:        "1 for what the agent's last probe found of the runtime's NRI default validator: enforced (on), unenforced (off) or unknown (not probed, or could not tell).",
			ConstLabels: prometheus.Labels{"result": v},
		}, func() float64 {
			if p.Result() == r {
				return 1
			}
			return 0
		})
		if err := reg.Register(g); err != nil {
			return nil, fmt.Errorf("register podnet_agent_nri_validator{result=%q}: %w", v, err)
		}
	}
	return p, nil
}

// Kick asks for a probe (the NRI plugin connected); kicks while one is
// pending count once.
func (p *NRIProbe) Kick() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Result is the last probe's answer; Unknown before the first.
func (p *NRIProbe) Result() nriprobe.Result {
	return p.last.Load().(nriprobe.Result)
}

// Enforced says whether the last probe found the validator on; false for
// a nil NRIProbe.
func (p *NRIProbe) Enforced() bool {
	return p != nil && p.Result() == nriprobe.Enforced
}

// Start probes at each kick and reports the answer, until ctx ends.
func (p *NRIProbe) Start(ctx context.Context) error {
	if p.Prober == nil {
		p.report(ctx, nriprobe.Unknown)
		return nil
	}
	first := time.NewTimer(firstConnectWait)
	defer first.Stop()
	waiting := first.C // nil once the plugin connected or the wait is over
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-waiting:
			waiting = nil
			p.report(ctx, nriprobe.Unknown)
			continue
		case <-p.kick:
			waiting = nil
		}
		r := p.probe(ctx)
		p.last.Store(r)
		p.report(ctx, r)
	}
}

// probe runs the probe, again a few times while it cannot tell (the
// runtime busy at its restart).
func (p *NRIProbe) probe(ctx context.Context) nriprobe.Result {
	wait := probeRetryFirst
	for try := 1; ; try++ {
		r, err := p.Prober.Probe(ctx)
		if err != nil {
			p.Log.Error(err, "NRI validator probe", "result", r, "try", try)
		}
		if r != nriprobe.Unknown || try == probeTries || !sleep(ctx, wait) {
			p.Log.Info("NRI validator probed", "result", r)
			return r
		}
		wait = min(2*wait, probeRetryMax)
	}
}

// report writes r on the Node, again with backoff until the API server
// takes it, a new probe is asked for, or ctx ends.
func (p *NRIProbe) report(ctx context.Context, r nriprobe.Result) {
	wait := probeRetryFirst
	for {
		err := p.Report(ctx, r)
		if err == nil {
			return
		}
		p.Log.Error(err, "report the NRI validator on the Node", "result", r, "retryIn", wait)
		if len(p.kick) > 0 || !sleep(ctx, wait) {
			return
		}
		wait = min(2*wait, probeRetryMax)
	}
}

// sleep waits d, false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
