package burst

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"podnet.io/podnet/test/bench"
)

// result is what one Deployment of the bench measured.
type result struct {
	start          time.Time
	pods           []timeline
	before, after  string // the agent's metrics at the start and at the end
	deploymentName string
	// withoutNetworks counts the pods whose app's first command found
	// an interface missing; unreported those whose log lacks its line.
	withoutNetworks, unreported int
}

// quantiles are the percentiles of the per-pod figures.
var quantiles = []struct {
	name string
	q    float64
}{{"p50", 0.5}, {"p99", 0.99}}

// nriHookMetric is the agent's histogram of its NRI hooks' durations,
// labelled hook=RunPodSandbox|CreateContainer.
const nriHookMetric = "podnet_agent_nri_hook_seconds"

var nriHooks = []string{"RunPodSandbox", "CreateContainer"}

// reportNRIHooks prints, for pods attached through NRI, the agent's NRI
// hook times p50 and p99 per hook, estimated within the buckets of
// nriHookMetric (as histogram_quantile does), and from the sandbox's
// creation until the bench saw networks-ready.
func reportNRIHooks(w io.Writer, pfx string, v variant, r result) {
	for _, hook := range nriHooks {
		before := bench.Buckets(r.before, nriHookMetric, fmt.Sprintf("hook=%q", hook))
		after := bench.Buckets(r.after, nriHookMetric, fmt.Sprintf("hook=%q", hook))
		for _, q := range quantiles {
			x := bench.Quantile(before, after, q.q)
			if math.IsNaN(x) {
				fmt.Fprintf(w, "burst: %s: no %s{hook=%q} observation: the agent's NRI plugin was not called\n", v.name, nriHookMetric, hook)
				continue
			}
			fmt.Fprintf(w, "%sagent_nri_hook_%s_%s_%s %.1f ms\n", pfx, hook, v.name, q.name, x*1000)
		}
	}
	seen := durations(r.pods, func(p timeline) time.Time { return p.SandboxCreated }, func(p timeline) time.Time { return p.NetworksReady })
	for _, q := range quantiles {
		if len(seen) > 0 {
			fmt.Fprintf(w, "%ssandbox_created_to_networks_ready_seen_%s_%s %s ms\n", pfx, v.name, q.name, ms(bench.Percentile(seen, q.q)))
		}
	}
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
}

func secs(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 2, 64)
}
