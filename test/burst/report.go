package burst

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"podnet.io/podnet/test/bench"
)

// result is what one Deployment of the bench measured.
type result struct {
	start         time.Time
	pods          []timeline
	before, after string       // the agent's metrics at the start and at the end
	sched         *schedCounts // the scheduler's counts of the node's processes
	// sampled is how long the scheduler's counts ran: from the
	// Deployment's creation until its pods were all Ready.
	sampled        time.Duration
	deploymentName string
	// withoutNetworks counts the pods whose app's first command found
	// an interface missing; unreported those whose log lacks its line.
	withoutNetworks, unreported int
	// phases is what the agent's CPU profiles over the arm held; nil
	// when it was not profiled.
	phases *phaseSpan
}

// phaseSpan is the agent's CPU time in its profiles, in nanoseconds by
// phase (cpuByPhase), and its metrics when the first began and when the
// last ended.
type phaseSpan struct {
	byPhase       map[string]int64
	before, after string
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

// nriRefusedMetric counts the containers the agent's NRI plugin refused
// (the kubelet creates each again after its backoff), nriHookedMetric
// those it created with its wait hook instead (no retry).
const (
	nriRefusedMetric = "podnet_agent_nri_containers_refused_total"
	nriHookedMetric  = "podnet_agent_nri_containers_hooked_total"
)

// reportNRIHooks prints, for pods attached through NRI, the agent's NRI
// hook times p50 and p99 per hook, estimated within the buckets of
// nriHookMetric (as histogram_quantile does), and from the sandbox's
// creation until the bench saw networks-ready; and how many containers
// the plugin refused, each a pod that waited for the kubelet's backoff,
// and how many it created with its wait hook instead.
func reportNRIHooks(w io.Writer, pfx string, v variant, r result) {
	for _, c := range []struct{ metric, name string }{{nriRefusedMetric, "refused"}, {nriHookedMetric, "hooked"}} {
		n0, err0 := bench.Gauge(r.before, c.metric)
		n, err := bench.Gauge(r.after, c.metric)
		if err := errors.Join(err0, err); err != nil {
			fmt.Fprintf(w, "burst: %s: %v\n", v.name, err)
			continue
		}
		fmt.Fprintf(w, "%sagent_nri_containers_%s_%s %.0f containers\n", pfx, c.name, v.name, n-n0)
	}
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
	reportSteps(w, pfx, v, r)
	seen := durations(r.pods, func(p timeline) time.Time { return p.SandboxCreated }, func(p timeline) time.Time { return p.NetworksReady })
	for _, q := range quantiles {
		if len(seen) > 0 {
			fmt.Fprintf(w, "%ssandbox_created_to_networks_ready_seen_%s_%s %s ms\n", pfx, v.name, q.name, ms(bench.Percentile(seen, q.q)))
		}
	}
}

// reportSteps prints, for pods attached at sandbox setup (CNI or NRI),
// the agent's podnet_agent_sandbox_setup_seconds p50 and p99 by step
// (estimated within its buckets, as histogram_quantile does): from the
// runtime's request, how long the attach waited for a worker, then for
// its addresses and its interfaces.
func reportSteps(w io.Writer, pfx string, v variant, r result) {
	const metric = "podnet_agent_sandbox_setup_seconds"
	for _, step := range []string{"wait", "addresses", "interfaces", "total"} {
		before := bench.Buckets(r.before, metric, fmt.Sprintf("step=%q", step))
		after := bench.Buckets(r.after, metric, fmt.Sprintf("step=%q", step))
		for _, q := range quantiles {
			fmt.Fprintf(w, "%sagent_sandbox_setup_%s_%s_%s %.1f ms\n", pfx, step, v.name, q.name, bench.Quantile(before, after, q.q)*1000)
		}
	}
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
}

func secs(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 2, 64)
}

// roundsEnv is how many times each N runs every arm (default: the
// mode's): with more than one, the arms alternate round after round and
// the medians below say what one slow arm would otherwise hide.
const roundsEnv = "PODNET_BURST_ROUNDS"

// burstRounds reads roundsEnv, def when it is unset.
func burstRounds(env string, def int) (int, error) {
	if env == "" {
		return def, nil
	}
	r, err := strconv.Atoi(env)
	if err != nil || r < 1 || r > 9 {
		return 0, fmt.Errorf("%s %q: want a number of rounds from 1 to 9", roundsEnv, env)
	}
	return r, nil
}

// reportMedians prints, over the rounds of one N, the median of each
// podnet and Multus arm's all-Ready ratio to the arm without networks
// (and, for podnet, to Multus with as many networks), of its app-start
// p99 delay over the arm without networks and of the CPU per pod that
// podnet's processes took beyond that arm's, each taken within its own
// round; and the pods whose app started before their interfaces, summed
// over the rounds.
func reportMedians(w io.Writer, pfx string, variants []variant, rounds []map[string]result) {
	for _, v := range variants {
		if !v.setAgainst() {
			continue
		}
		var vsWithout, vsMultus, added []float64
		var delays []time.Duration
		early := 0
		for _, res := range rounds {
			r, plain := res[v.name], res[v.baseName()]
			if a, ok := podnetCPUPerPod(r); ok {
				if b, ok := podnetCPUPerPod(plain); ok {
					added = append(added, a-b)
				}
			}
			all, _ := allReady(r.pods, r.start)
			plainAll, _ := allReady(plain.pods, plain.start)
			vsWithout = append(vsWithout, float64(all)/float64(plainAll))
			if m, ok := res[v.vsMultus]; ok {
				mAll, _ := allReady(m.pods, m.start)
				vsMultus = append(vsMultus, float64(all)/float64(mAll))
			}
			delays = append(delays, bench.Percentile(appStarts(r.pods), 0.99)-bench.Percentile(appStarts(plain.pods), 0.99))
			early += r.withoutNetworks
		}
		fmt.Fprintf(w, "%sall_ready_ratio_%s_vs_without %.2f x\n", pfx, v.name, bench.Percentile(vsWithout, 0.5))
		if len(vsMultus) > 0 {
			fmt.Fprintf(w, "%sall_ready_ratio_%s_vs_%s %.2f x\n", pfx, v.name, v.vsMultus, bench.Percentile(vsMultus, 0.5))
		}
		fmt.Fprintf(w, "%sapp_start_p99_delay_%s_vs_without %s ms\n", pfx, v.name, ms(bench.Percentile(delays, 0.5)))
		fmt.Fprintf(w, "%sapps_started_before_interfaces_%s %d pods\n", pfx, v.name, early)
		if len(added) == len(rounds) {
			fmt.Fprintf(w, "%scpu_per_pod_podnet_added_%s_vs_without %.1f ms\n", pfx, v.name, bench.Percentile(added, 0.5))
		}
		var all []result
		for _, res := range rounds {
			all = append(all, res[v.name])
		}
		reportPhases(w, pfx, v.name, "_pooled", all...)
	}
}

// reportPhases prints the agent's CPU time per pod by phase over the arms
// rs (agentCPUByPhase), each line's name ending in suffix.
func reportPhases(w io.Writer, pfx, arm, suffix string, rs ...result) {
	byPhase, ok := agentCPUByPhase(rs...)
	if !ok {
		return
	}
	for _, name := range append(phaseNames(), unprofiledPhase) {
		fmt.Fprintf(w, "%sagent_cpu_per_pod_%s_phase_%s%s %.2f ms\n", pfx, arm, name, suffix, byPhase[name])
	}
}

// unprofiledPhase is the agent's CPU time (process_cpu_seconds_total)
// that its profiles did not sample.
const unprofiledPhase = "not_in_profiles"

// agentCPUByPhase is the agent's CPU time per pod in its profiles over
// the arms rs, by phase, in milliseconds, and under unprofiledPhase what
// the process's own count over the profiles' span holds beyond them;
// false when an arm was not profiled or lacks the metric. Each phase's figure is its samples (10
// ms each, 100 a second), pooled over the arms: the count is not spread
// over the phases by their shares.
func agentCPUByPhase(rs ...result) (map[string]float64, bool) {
	pooled := map[string]int64{}
	var cpu float64
	pods := 0
	for _, r := range rs {
		if r.phases == nil {
			return nil, false
		}
		cpu0, err0 := bench.Gauge(r.phases.before, "process_cpu_seconds_total")
		cpu1, err := bench.Gauge(r.phases.after, "process_cpu_seconds_total")
		if err0 != nil || err != nil {
			return nil, false
		}
		cpu += cpu1 - cpu0
		pods += len(r.pods)
		for name, ns := range r.phases.byPhase {
			pooled[name] += ns
		}
	}
	if pods == 0 {
		return nil, false
	}
	out := map[string]float64{}
	profiled := 0.0
	for _, name := range phaseNames() {
		out[name] = float64(pooled[name]) / 1e6 / float64(pods)
		profiled += out[name]
	}
	out[unprofiledPhase] = 1000*cpu/float64(pods) - profiled
	return out, true
}

// podnetCommands are podnet's own processes on the node, by the kernel's
// command name (cut to 15 bytes).
var podnetCommands = []string{"podnet-agent", "podnet-webhook", "podnet-controll"}

// podnetCPUPerPod is the CPU time podnet's processes took during the arm,
// in milliseconds per pod; false when the arm has no scheduler counts.
// Set against the arm without networks (same N, same pace, podnet
// installed and running), it is what the pods' networks added.
func podnetCPUPerPod(r result) (float64, bool) {
	if r.sched == nil || len(r.pods) == 0 {
		return 0, false
	}
	var run time.Duration
	for _, name := range podnetCommands {
		run += r.sched.total[name].run
	}
	return float64(run) / float64(time.Millisecond) / float64(len(r.pods)), true
}

// roundOrder is the order round (from 0) runs the arms in: as listed,
// then reversed, and so on, so that no arm always runs first after the
// last round's or always follows the same arm.
func roundOrder(vs []variant, round int) []variant {
	out := slices.Clone(vs)
	if round%2 == 1 {
		slices.Reverse(out)
	}
	return out
}

// Before each arm the bench waits, at most quietLimit, until the machine's
// CPUs were busy at most quietBusy over bench.QuietWindow: the local
// cluster idles well below it, and every arm then starts on a machine
// done with the last one.
var (
	quietBusy  = 0.25
	quietLimit = bench.Size(60*time.Second, 0) // smoke: one look, no wait
)

// settle waits for a quiet machine before arm v and says how long it took.
func settle(n, round int, v variant) {
	waited, busy, err := bench.WaitQuiet(quietBusy, quietLimit)
	switch {
	case err != nil:
		fmt.Printf("burst: n=%d round %d %s: the machine's CPU time is unreadable, not waited: %v\n", n, round+1, v.name, err)
	case busy > quietBusy:
		fmt.Printf("burst: n=%d round %d %s: machine still %.0f%% busy after %.0f s, started anyway\n", n, round+1, v.name, 100*busy, waited.Seconds())
	default:
		fmt.Printf("burst: n=%d round %d %s: machine quiet (%.0f%% busy) after %.0f s\n", n, round+1, v.name, 100*busy, waited.Seconds())
	}
}
