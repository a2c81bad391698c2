package burst

import (
	"fmt"
	"io"
	"strings"

	pprofile "github.com/google/pprof/profile"
)

// cpuPhase is one part of the agent's work on a pod, recognised in a CPU
// profile's stack by the function that does it.
type cpuPhase struct {
	name string
	// in lists prefixes of the function names (package path and
	// receiver) of this phase's frames.
	in []string
}

// agentPhases are the parts of the agent's work a CPU sample is put
// under, in order: a sample goes to the first phase one of whose
// functions is on its stack, so a JSON encode inside the status write
// counts as the report, and the API client's transport, the garbage
// collector and the Go scheduler only take what no phase holds.
//
// The attach's phases are the reconciler's own steps
// (agent/attach_phases.go) with what they call, on their goroutine or
// one they start: judge verifies the approval and re-judges the grant,
// claim takes the addresses (IPClaims), resolve finds the sandbox, plan
// translates the approval, apply reads the pod's netns and writes links
// and nftables, report answers the runtime and writes the status, hands
// the Event over and checks for containers started without networks.
// The NRI plugin's hooks come before the rest of the agent's own code,
// which they call into while they wait for the attach; watch (decoding
// and the handlers that choose what to reconcile) before it too, as its
// handlers are the agent's. node_links is the agent reading the node's
// link events (agent/nodecarry); bench_reads its metrics and profiles
// being read by this bench.
var agentPhases = []cpuPhase{
	{"verify", []string{"podnet.io/podnet/agent.(*Reconciler).judge", "podnet.io/podnet/pkg/approval.", "podnet.io/podnet/pkg/policy."}},
	{"claim", []string{"podnet.io/podnet/agent.(*Reconciler).claim", "podnet.io/podnet/agent.(*Reconciler).ensureAddresses",
		"podnet.io/podnet/agent.(*Reconciler).ensureMACs", "podnet.io/podnet/agent.IPAM.",
		"podnet.io/podnet/pkg/ipam.", "podnet.io/podnet/pkg/claims.", "podnet.io/podnet/pkg/macpool."}},
	{"sandbox", []string{"podnet.io/podnet/agent.(*Reconciler).resolve", "podnet.io/podnet/pkg/cri."}},
	{"plan", []string{"podnet.io/podnet/agent.(*Reconciler).plan", "podnet.io/podnet/agent.planPod"}},
	{"netlink_nftables", []string{"podnet.io/podnet/agent.(*Reconciler).apply", "podnet.io/podnet/pkg/dataplane."}},
	{"report", []string{"podnet.io/podnet/agent.(*Reconciler).report"}},
	{"nri", []string{"github.com/containerd/nri/", "github.com/containerd/ttrpc.", "podnet.io/podnet/agent/nri."}},
	{"watch", []string{"k8s.io/client-go/tools/cache.(*Reflector)", "k8s.io/client-go/tools/cache.(*processorListener)",
		"k8s.io/client-go/tools/cache.(*sharedIndexInformer)", "k8s.io/client-go/tools/cache.(*controller)",
		"k8s.io/client-go/tools/cache.(*DeltaFIFO)", "k8s.io/client-go/tools/cache.(*RealFIFO)",
		"k8s.io/apimachinery/pkg/watch.", "k8s.io/client-go/rest/watch."}},
	{"reconcile_other", []string{"podnet.io/podnet/agent.", "sigs.k8s.io/controller-runtime/pkg/internal/controller."}},
	{"events", []string{"k8s.io/client-go/tools/events.", "k8s.io/client-go/tools/record."}},
	{"node_links", []string{"podnet.io/podnet/agent/nodecarry."}},
	{"bench_reads", []string{"github.com/prometheus/client_golang/prometheus/promhttp.", "net/http/pprof.", "runtime/pprof."}},
	{"api_transport", []string{"net/http.", "crypto/tls.", "golang.org/x/net/http2."}},
	{"gc", []string{"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge", "runtime.forEachP", "runtime.gcStart"}},
	{"go_scheduler", []string{"runtime.mcall", "runtime.schedule", "runtime.findRunnable", "runtime.park_m"}},
}

// otherPhase takes the samples no phase claims.
const otherPhase = "other"

// phaseNames are the phases in the order they are printed.
func phaseNames() []string {
	names := make([]string, 0, len(agentPhases)+1)
	for _, p := range agentPhases {
		names = append(names, p.name)
	}
	return append(names, otherPhase)
}

// phaseOf is the phase of a stack, given its function names.
func phaseOf(funcs []string) string {
	for _, p := range agentPhases {
		for _, f := range funcs {
			for _, prefix := range p.in {
				if strings.HasPrefix(f, prefix) {
					return p.name
				}
			}
		}
	}
	return otherPhase
}

// cpuByPhase adds the CPU time of every sample of the profile read from r
// to into, in nanoseconds, under the sample's phase.
func cpuByPhase(r io.Reader, into map[string]int64) error {
	p, err := pprofile.Parse(r)
	if err != nil {
		return fmt.Errorf("parse the agent's CPU profile: %w", err)
	}
	cpu := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			cpu = i
		}
	}
	if cpu < 0 {
		return fmt.Errorf("the agent's profile has no cpu nanoseconds among its sample types %v", p.SampleType)
	}
	for _, s := range p.Sample {
		var funcs []string
		for _, loc := range s.Location {
			for _, l := range loc.Line {
				if l.Function != nil {
					funcs = append(funcs, l.Function.Name)
				}
			}
		}
		into[phaseOf(funcs)] += s.Value[cpu]
	}
	return nil
}
