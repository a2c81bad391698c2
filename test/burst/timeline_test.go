package burst

import (
	"testing"
	"time"
)

func TestPhasesSplitAPodStart(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	pods := []timeline{
		{Created: at(0), Scheduled: at(10), SandboxCreated: at(30), SandboxReady: at(130), NetworksReady: at(160), WaitDone: at(300), AppStarted: at(400), Ready: at(500)},
		{Created: at(5), Scheduled: at(20), SandboxCreated: at(60), SandboxReady: at(260), NetworksReady: at(300), WaitDone: at(500), AppStarted: at(700), Ready: at(900), Unschedulable: true},
		{Created: at(6)}, // never scheduled: counts in no phase
	}
	want := map[string][]time.Duration{
		"scheduler":                                     {10 * time.Millisecond, 15 * time.Millisecond},
		"kubelet_to_sandbox_created":                    {20 * time.Millisecond, 40 * time.Millisecond},
		"containerd_sandbox_setup":                      {100 * time.Millisecond, 200 * time.Millisecond},
		"agent_sandbox_ready_to_networks_ready":         {30 * time.Millisecond, 40 * time.Millisecond},
		"kubelet_networks_ready_to_wait_container_done": {140 * time.Millisecond, 200 * time.Millisecond},
		"kubelet_wait_container_done_to_app_started":    {100 * time.Millisecond, 200 * time.Millisecond},
	}
	got := phases(waitContainer)
	if len(got) != len(want) {
		t.Fatalf("%d phases, want %d", len(got), len(want))
	}
	for _, ph := range got {
		d := durations(pods, ph.From, ph.To)
		if len(d) != 2 || d[0] != want[ph.Name][0] || d[1] != want[ph.Name][1] {
			t.Errorf("%s = %v, want %v", ph.Name, d, want[ph.Name])
		}
	}
	if set := phases(sandboxSetup); len(set) != 4 || set[2].Name != "containerd_sandbox_setup" || set[3].Name != "kubelet_sandbox_ready_to_app_started" {
		t.Errorf("at sandbox setup the agent's step is inside containerd's setup, and no wait step follows: %v", set)
	}
	if last := phases(noNetworks)[3]; last.Name != "kubelet_sandbox_ready_to_app_started" || durations(pods, last.From, last.To)[0] != 270*time.Millisecond {
		t.Errorf("without networks the app start is measured from the sandbox: %s", last.Name)
	}
	if _, ok := allReady(pods, t0); ok {
		t.Error("allReady with a pod never Ready must say so")
	}
	if d, ok := allReady(pods[:2], t0); !ok || d != 900*time.Millisecond {
		t.Errorf("allReady = %v %v, want 900ms", d, ok)
	}
	if n := unschedulable(pods); n != 1 {
		t.Errorf("unschedulable = %d, want 1", n)
	}
}
