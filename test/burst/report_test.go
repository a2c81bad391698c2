package burst

import (
	"strings"
	"testing"
	"time"
)

// TestReportNRIHooks: the NRI hook lines come from the observations made
// between the two scrapes of the agent's histogram, per hook; a hook
// without any prints no figure, only a line saying the plugin was not
// called; the refused containers are those counted between the scrapes.
func TestReportNRIHooks(t *testing.T) {
	before := `podnet_agent_nri_hook_seconds_bucket{hook="RunPodSandbox",le="0.005"} 1
podnet_agent_nri_hook_seconds_bucket{hook="RunPodSandbox",le="0.01"} 1
podnet_agent_nri_hook_seconds_bucket{hook="RunPodSandbox",le="0.025"} 1
podnet_agent_nri_hook_seconds_bucket{hook="RunPodSandbox",le="+Inf"} 1
podnet_agent_nri_containers_refused_total 4
podnet_agent_nri_containers_hooked_total 0
`
	// Since then: 2 more at most 10 ms, 2 more at most 25 ms.
	after := `podnet_agent_nri_hook_seconds_bucket{hook="RunPodSandbox",le="0.005"} 1
podnet_agent_nri_hook_seconds_bucket{hook="RunPodSandbox",le="0.01"} 3
podnet_agent_nri_hook_seconds_bucket{hook="RunPodSandbox",le="0.025"} 5
podnet_agent_nri_hook_seconds_bucket{hook="RunPodSandbox",le="+Inf"} 5
podnet_agent_nri_containers_refused_total 7
podnet_agent_nri_containers_hooked_total 5
`
	t0 := time.Unix(1000, 0)
	pods := []timeline{{SandboxCreated: t0, NetworksReady: t0.Add(40 * time.Millisecond)}}
	var out strings.Builder
	reportNRIHooks(&out, "BENCH x_", variant{name: "1_network"}, result{before: before, after: after, pods: pods})
	got := out.String()
	for _, want := range []string{
		"BENCH x_agent_nri_hook_RunPodSandbox_1_network_p50 10.0 ms\n",
		"BENCH x_agent_nri_hook_RunPodSandbox_1_network_p99 24.7 ms\n",
		`burst: 1_network: no podnet_agent_nri_hook_seconds{hook="CreateContainer"} observation`,
		"BENCH x_sandbox_created_to_networks_ready_seen_1_network_p99 40.0 ms\n",
		"BENCH x_agent_nri_containers_refused_1_network 3 containers\n",
		"BENCH x_agent_nri_containers_hooked_1_network 5 containers\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "agent_nri_hook_CreateContainer") {
		t.Errorf("a figure for a hook never called:\n%s", got)
	}
}
