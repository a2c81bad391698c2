package burst

import (
	"strings"
	"testing"
	"time"
)

// TestReportMedians: over three rounds the ratios and delays are each
// round's own (arm against the arm without networks of the same round),
// then their median, so that one slow round of one arm moves nothing; the
// pods whose app started before their interfaces add up.
func TestReportMedians(t *testing.T) {
	t0 := time.Unix(1000, 0)
	// arm makes a result whose every pod is Ready and its app started
	// after d, early of them before their interfaces.
	arm := func(d time.Duration, early int) result {
		p := timeline{Created: t0, Ready: t0.Add(d), AppStarted: t0.Add(d)}
		// podnet's processes ran 2 ms per second of the arm, per pod:
		// half of it the agent's, a quarter each the webhook's and the
		// controller's; containerd's is not podnet's.
		cpu := 2 * time.Millisecond * time.Duration(d.Seconds())
		sched := &schedCounts{total: map[string]schedStat{"podnet-agent": {run: cpu}, "podnet-webhook": {run: cpu / 2}, "podnet-controll": {run: cpu / 2}, "containerd": {run: time.Second}}}
		return result{start: t0, pods: []timeline{p, p}, withoutNetworks: early, sched: sched}
	}
	vs := []variant{
		{name: "without_networks", kind: noNetworks},
		{name: "1_network", kind: waitContainer, vsMultus: "multus_1_network"},
		{name: "multus_1_network", kind: multusCNI},
		{name: "without_networks_again", kind: noNetworks, control: true},
		{name: "without_networks_paced", kind: noNetworks, pace: pace},
		{name: "1_network_paced", kind: waitContainer, pace: pace, base: "without_networks_paced"},
	}
	rounds := []map[string]result{
		{"without_networks": arm(10*time.Second, 0), "1_network": arm(11*time.Second, 0), "multus_1_network": arm(12*time.Second, 0), "without_networks_again": arm(11*time.Second, 0), "without_networks_paced": arm(5*time.Second, 0), "1_network_paced": arm(6*time.Second, 0)},
		// One slow round of the podnet arm: 3×, set against its own round.
		{"without_networks": arm(10*time.Second, 0), "1_network": arm(30*time.Second, 1), "multus_1_network": arm(10*time.Second, 0), "without_networks_again": arm(9*time.Second, 0), "without_networks_paced": arm(5*time.Second, 0), "1_network_paced": arm(6*time.Second, 0)},
		{"without_networks": arm(20*time.Second, 0), "1_network": arm(24*time.Second, 0), "multus_1_network": arm(20*time.Second, 0), "without_networks_again": arm(22*time.Second, 0), "without_networks_paced": arm(5*time.Second, 0), "1_network_paced": arm(7*time.Second, 0)},
	}
	var out strings.Builder
	reportMedians(&out, "BENCH x_", vs, rounds)
	got := out.String()
	for _, want := range []string{
		"BENCH x_all_ready_ratio_1_network_vs_without 1.20 x\n",          // 1.1, 3.0, 1.2
		"BENCH x_all_ready_ratio_1_network_vs_multus_1_network 1.20 x\n", // 0.92, 3.0, 1.2
		"BENCH x_app_start_p99_delay_1_network_vs_without 4000.0 ms\n",   // 1 s, 20 s, 4 s
		"BENCH x_apps_started_before_interfaces_1_network 1 pods\n",
		"BENCH x_all_ready_ratio_multus_1_network_vs_without 1.00 x\n", // 1.2, 1.0, 1.0
		// The control arm: the noise of the same arm run twice.
		"BENCH x_all_ready_ratio_without_networks_again_vs_without 1.10 x\n",        // 1.1, 0.9, 1.1
		"BENCH x_app_start_p99_delay_without_networks_again_vs_without 1000.0 ms\n", // 1 s, -1 s, 2 s
		// A paced arm against the paced arm without networks.
		"BENCH x_app_start_p99_delay_1_network_paced_vs_without 1000.0 ms\n", // 1 s, 1 s, 2 s
		"BENCH x_all_ready_ratio_1_network_paced_vs_without 1.20 x\n",        // 1.2, 1.2, 1.4
		// podnet's CPU beyond the arm without networks: 2 ms per pod for
		// each second the arm took longer.
		"BENCH x_cpu_per_pod_podnet_added_1_network_vs_without 8.0 ms\n",       // 2 ms, 40 ms, 8 ms
		"BENCH x_cpu_per_pod_podnet_added_1_network_paced_vs_without 2.0 ms\n", // 2 ms, 2 ms, 4 ms
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "_without_networks_vs") {
		t.Errorf("a ratio of the arm without networks to itself:\n%s", got)
	}
}

func TestBurstRounds(t *testing.T) {
	for env, want := range map[string]int{"": 2, "1": 1, "3": 3, "9": 9} {
		if got, err := burstRounds(env, 2); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", env, got, err, want)
		}
	}
	for _, env := range []string{"0", "10", "-1", "three"} {
		if _, err := burstRounds(env, 2); err == nil || !strings.Contains(err.Error(), roundsEnv) {
			t.Errorf("%q: err = %v, want one naming %s", env, err, roundsEnv)
		}
	}
}

func TestRoundOrderAlternates(t *testing.T) {
	vs := arms(nriSetup)
	names := func(vs []variant) string { return armNames(vs) }
	first, second, third := names(roundOrder(vs, 0)), names(roundOrder(vs, 1)), names(roundOrder(vs, 2))
	if first != names(vs) || third != first {
		t.Fatalf("rounds 1 and 3 run %q and %q, want the arms as listed: %q", first, third, names(vs))
	}
	want := "multus_1_network_paced, 1_network_paced, without_networks_paced, without_networks_again, multus_2_networks, 2_networks, multus_1_network, 1_network, without_networks"
	if second != want {
		t.Fatalf("round 2 runs %q, want %q", second, want)
	}
	if names(vs) != first {
		t.Fatalf("roundOrder reordered its input")
	}
}
