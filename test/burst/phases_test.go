package burst

import (
	"bytes"
	"math"
	"testing"

	pprofile "github.com/google/pprof/profile"
)

// stackProfile is a CPU profile with one sample of cpu nanoseconds per
// stack (function names, leaf first).
func stackProfile(t *testing.T, stacks map[int64][]string) *bytes.Buffer {
	t.Helper()
	p := &pprofile.Profile{
		SampleType: []*pprofile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &pprofile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
	}
	funcs := map[string]*pprofile.Function{}
	for ns, stack := range stacks {
		s := &pprofile.Sample{Value: []int64{1, ns}}
		for _, name := range stack {
			f := funcs[name]
			if f == nil {
				f = &pprofile.Function{ID: uint64(len(funcs) + 1), Name: name}
				funcs[name] = f
				p.Function = append(p.Function, f)
			}
			loc := &pprofile.Location{ID: uint64(len(p.Location) + 1), Line: []pprofile.Line{{Function: f}}}
			p.Location = append(p.Location, loc)
			s.Location = append(s.Location, loc)
		}
		p.Sample = append(p.Sample, s)
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return &b
}

func TestCPUByPhase(t *testing.T) {
	b := stackProfile(t, map[int64][]string{
		// JSON encoding inside the status write is the status write.
		1:  {"encoding/json.Marshal", "podnet.io/podnet/agent.(*Reconciler).writeStatus", "podnet.io/podnet/agent.(*Reconciler).report", "podnet.io/podnet/agent.(*Reconciler).Reconcile"},
		2:  {"github.com/vishvananda/netlink.(*Handle).LinkAdd", "podnet.io/podnet/pkg/dataplane.(*Dataplane).Apply", "podnet.io/podnet/agent.(*Reconciler).apply"},
		4:  {"encoding/json.(*decodeState).object", "k8s.io/apimachinery/pkg/runtime/serializer/json.(*Serializer).Decode", "k8s.io/client-go/tools/cache.(*Reflector).watch"},
		8:  {"podnet.io/podnet/agent.(*setupWaits).Wait", "podnet.io/podnet/agent/nri.(*plugin).RunPodSandbox", "github.com/containerd/ttrpc.(*server).handleConn"},
		16: {"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"},
		32: {"runtime.memmove", "main.main"},
		64: {"crypto/ed25519.Verify", "podnet.io/podnet/pkg/approval.Verify", "podnet.io/podnet/agent.(*Reconciler).judge"},
		// An address claimed on a goroutine of ensureAddresses.
		128: {"sigs.k8s.io/controller-runtime/pkg/client.(*client).Create", "podnet.io/podnet/pkg/ipam.(*Allocator).Ensure", "podnet.io/podnet/agent.(*Reconciler).ensureAddresses.func1"},
		// The agent's predicate, called by the informer's handler.
		256: {"podnet.io/podnet/agent.podChangeMatters", "k8s.io/client-go/tools/cache.(*processorListener).run"},
	})
	got := map[string]int64{}
	if err := cpuByPhase(b, got); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"report": 1, "netlink_nftables": 2, "watch": 4 + 256, "nri": 8, "gc": 16, otherPhase: 32, "verify": 64, "claim": 128}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("phase %s: %d ns, want %d (all: %v)", name, got[name], v, got)
		}
	}
}

func TestCPUByPhaseRefusesAProfileWithoutCPU(t *testing.T) {
	p := &pprofile.Profile{SampleType: []*pprofile.ValueType{{Type: "alloc_space", Unit: "bytes"}}}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	if err := cpuByPhase(&b, map[string]int64{}); err == nil {
		t.Fatal("a heap profile was read as a CPU profile")
	}
}

func TestAgentCPUByPhasePoolsRounds(t *testing.T) {
	round := func(before, after string, byPhase map[string]int64) result {
		return result{pods: make([]timeline, 10), phases: &phaseSpan{byPhase: byPhase,
			before: "process_cpu_seconds_total " + before + "\n", after: "process_cpu_seconds_total " + after + "\n"}}
	}
	// 0.3 s and 0.1 s of CPU over 20 pods (20 ms per pod), of which the
	// profiles sampled 200 ms of verify and 100 ms of gc.
	ms := int64(1e6)
	got, ok := agentCPUByPhase(round("1", "1.3", map[string]int64{"verify": 120 * ms}), round("2", "2.1", map[string]int64{"verify": 80 * ms, "gc": 100 * ms}))
	if !ok {
		t.Fatal("not split")
	}
	if math.Abs(got["verify"]-10) > 1e-9 || math.Abs(got["gc"]-5) > 1e-9 || got[otherPhase] != 0 || math.Abs(got[unprofiledPhase]-5) > 1e-9 {
		t.Fatalf("by phase %v, want verify 10 ms, gc 5 ms and 5 ms not in the profiles", got)
	}
	if _, ok := agentCPUByPhase(result{pods: make([]timeline, 10)}); ok {
		t.Fatal("an arm without profiles was split")
	}
}
