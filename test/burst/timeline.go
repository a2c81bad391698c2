package burst

import (
	"slices"
	"time"
)

// timeline is when the bench first saw each step of one pod's start; a
// zero time is a step not seen.
type timeline struct {
	Created        time.Time // the pod in the API (watch)
	Scheduled      time.Time // spec.nodeName set (watch)
	SandboxCreated time.Time // the sandbox's creation time, from the runtime
	SandboxReady   time.Time // the sandbox listed READY by the runtime (poll)
	NetworksReady  time.Time // podnet.io/networks-ready True (watch)
	WaitDone       time.Time // the podnet-wait init container terminated (watch)
	AppStarted     time.Time // the app container started (watch)
	Ready          time.Time // the pod Ready (watch)
	Unschedulable  bool      // PodScheduled False, Unschedulable, at any time
	// WaitMessage is the podnet-wait init container's termination
	// message, which ends with its usage (podwait.ParseUsage).
	WaitMessage string
}

// phase is one step of a pod's start: from one seen moment to the next.
type phase struct {
	Name     string
	From, To func(timeline) time.Time
}

// startKind is how a pod's start waits for its networks.
type startKind int

const (
	// noNetworks: a pod without podnet networks.
	noNetworks startKind = iota
	// waitContainer: the podnet-wait init container waits for them.
	waitContainer
	// sandboxSetup: podnet's chained CNI plugin holds the sandbox setup
	// until the agent attached them.
	sandboxSetup
	// nriSetup: the agent's NRI plugin starts attaching them when the
	// sandbox is created and holds the containers' creation until they
	// are there.
	nriSetup
	// multusCNI: Multus, the node's primary CNI plugin, attaches them
	// through the reference plugins inside the sandbox setup.
	multusCNI
)

// phases are the steps a pod goes through, in order, and who spends the
// time: the scheduler, the kubelet and containerd (sandbox and CNI), the
// agent (networks), the kubelet again: the wait init container seen
// done (its own exit, then the kubelet noticing it at its next relist of
// the runtime and reporting it), then the app container started. A pod
// without networks has no agent and no wait step; its app start is
// measured from its sandbox being ready, as is that of a pod attached at
// sandbox setup, which has its networks inside containerd's setup, before
// the sandbox is READY, and no wait step, and those of pods attached
// through NRI or by Multus, which have no wait step either.
func phases(k startKind) []phase {
	created := func(p timeline) time.Time { return p.Created }
	scheduled := func(p timeline) time.Time { return p.Scheduled }
	sbCreated := func(p timeline) time.Time { return p.SandboxCreated }
	sbReady := func(p timeline) time.Time { return p.SandboxReady }
	netReady := func(p timeline) time.Time { return p.NetworksReady }
	waitDone := func(p timeline) time.Time { return p.WaitDone }
	started := func(p timeline) time.Time { return p.AppStarted }
	out := []phase{
		{"scheduler", created, scheduled},
		{"kubelet_to_sandbox_created", scheduled, sbCreated},
		{"containerd_sandbox_setup", sbCreated, sbReady},
	}
	if k == sandboxSetup {
		// The agent attaches inside containerd's sandbox setup: set
		// this pod's containerd_sandbox_setup beside that of a pod
		// without networks; the agent's own share is
		// podnet_agent_sandbox_setup_seconds.
		return append(out, phase{"kubelet_sandbox_ready_to_app_started", sbReady, started})
	}
	if k == waitContainer {
		return append(out,
			phase{"agent_sandbox_ready_to_networks_ready", sbReady, netReady},
			phase{"kubelet_networks_ready_to_wait_container_done", netReady, waitDone},
			phase{"kubelet_wait_container_done_to_app_started", waitDone, started})
	}
	return append(out, phase{"kubelet_sandbox_ready_to_app_started", sbReady, started})
}

// durations is To-From of every pod that has both, sorted.
func durations(pods []timeline, from, to func(timeline) time.Time) []time.Duration {
	var out []time.Duration
	for _, p := range pods {
		if f, t := from(p), to(p); !f.IsZero() && !t.IsZero() {
			out = append(out, max(t.Sub(f), 0))
		}
	}
	slices.Sort(out)
	return out
}

// allReady is how long after start the last pod turned Ready; false when
// a pod never did.
func allReady(pods []timeline, start time.Time) (time.Duration, bool) {
	var last time.Time
	for _, p := range pods {
		if p.Ready.IsZero() {
			return 0, false
		}
		if p.Ready.After(last) {
			last = p.Ready
		}
	}
	return last.Sub(start), len(pods) > 0
}

// unschedulable counts the pods the scheduler refused at least once.
func unschedulable(pods []timeline) int {
	n := 0
	for _, p := range pods {
		if p.Unschedulable {
			n++
		}
	}
	return n
}

// appStarts is each pod's time from creation to its app running, sorted.
func appStarts(pods []timeline) []time.Duration {
	return durations(pods, func(p timeline) time.Time { return p.Created }, func(p timeline) time.Time { return p.AppStarted })
}
