package nri

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/cnisocket"
)

// fakeAttacher records starts; its attaches answer when told to.
type fakeAttacher struct {
	mu     sync.Mutex
	starts []cnisocket.Request
	err    error
	att    *fakeAttach
}

func (f *fakeAttacher) Start(_ context.Context, req cnisocket.Request) (Attach, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = append(f.starts, req)
	if f.err != nil {
		return nil, f.err
	}
	return f.att, nil
}

func (f *fakeAttacher) started() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.starts)
}

type fakeAttach struct {
	answers chan error
	mu      sync.Mutex
	again   int
	closed  bool
}

func (a *fakeAttach) Interfaces() []string { return []string{"net1", "net2"} }
func (a *fakeAttach) NetNS() string        { return "/var/run/netns/x" }
func (a *fakeAttach) Await(ctx context.Context) error {
	select {
	case err := <-a.answers:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (a *fakeAttach) Again() { a.mu.Lock(); a.again++; a.mu.Unlock() }
func (a *fakeAttach) Close() { a.mu.Lock(); a.closed = true; a.mu.Unlock() }

// fakeLinks is a netns whose links the test sets.
type fakeLinks struct {
	mu    sync.Mutex
	links map[string]bool
}

func (l *fakeLinks) read(path string) (map[string]bool, error) {
	if path == "" {
		return nil, errors.New("no netns")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]bool{}
	for k, v := range l.links {
		out[k] = v
	}
	return out, nil
}

func (l *fakeLinks) set(names ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range names {
		l.links[n] = true
	}
}

func newTestPlugin(a *fakeAttacher, l *fakeLinks) *Plugin {
	return &Plugin{Attacher: a, CreateWait: 200 * time.Millisecond, links: l.read}
}

// approved is a pod the webhook approved and chose NRI to hold.
var approved = map[string]string{v1alpha1.ApprovedAnnotation: "payload", v1alpha1.NRIRequiredPluginsAnnotation: v1alpha1.NRIRequiredPluginsValue}

func create(p *Plugin, pod *api.PodSandbox) error {
	_, _, err := p.CreateContainer(context.Background(), pod, &api.Container{Name: "app"})
	return err
}

func TestPlainPodNeverHeld(t *testing.T) {
	a := &fakeAttacher{}
	p := newTestPlugin(a, &fakeLinks{links: map[string]bool{}})
	pod := sandbox(nil, "/var/run/netns/x")
	if err := p.RunPodSandbox(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if err := create(p, pod); err != nil {
		t.Errorf("plain pod's container refused: %v", err)
	}
	if n := a.started(); n != 0 {
		t.Errorf("%d attaches started for a plain pod, want none", n)
	}
}

// TestPodHeldOtherwiseNotHeld: a podnet pod the webhook holds with the
// wait init container or the chained CNI plugin carries no
// required-plugins annotation; NRI neither refuses nor attaches it.
func TestPodHeldOtherwiseNotHeld(t *testing.T) {
	a := &fakeAttacher{}
	p := newTestPlugin(a, &fakeLinks{links: map[string]bool{}})
	p.Claimed = func(string) bool { return true }
	for _, ann := range []map[string]string{
		{v1alpha1.ApprovedAnnotation: "payload"},
		{v1alpha1.ApprovedAnnotation: "payload", v1alpha1.NRIRequiredPluginsAnnotation: `["other"]`},
		nil, // a claim-only pod
	} {
		pod := sandbox(ann, "/var/run/netns/x")
		if err := p.RunPodSandbox(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
		if err := create(p, pod); err != nil {
			t.Errorf("%v: container refused: %v", ann, err)
		}
	}
	if n := a.started(); n != 0 {
		t.Errorf("%d attaches started, want none", n)
	}
}

func TestContainerHeldUntilInterfacesExist(t *testing.T) {
	att := &fakeAttach{answers: make(chan error, 1)}
	a := &fakeAttacher{att: att}
	links := &fakeLinks{links: map[string]bool{"lo": true, "eth0": true}}
	p := newTestPlugin(a, links)
	m := withMetrics(t, p)
	pod := sandbox(approved, "/var/run/netns/x")
	if err := p.RunPodSandbox(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	// The attach fails: the container is refused, naming what is missing
	// and why, and the pod is enqueued again.
	att.answers <- errors.New("IPAM failed")
	err := create(p, pod)
	if err == nil || !strings.Contains(err.Error(), "net1, net2") || !strings.Contains(err.Error(), "IPAM failed") {
		t.Fatalf("CreateContainer = %v, want a refusal naming net1, net2 and the attach's error", err)
	}
	// Half attached, no answer within the budget: still refused.
	links.set("net1")
	err = create(p, pod)
	if err == nil || !strings.Contains(err.Error(), "net2") || strings.Contains(err.Error(), "net1,") {
		t.Fatalf("CreateContainer = %v, want a refusal naming net2 only", err)
	}
	att.mu.Lock()
	again := att.again
	att.mu.Unlock()
	if again != 2 {
		t.Errorf("the pod was enqueued again %d times after 2 refusals", again)
	}
	// The attach completes while the container waits: admitted.
	go func() {
		time.Sleep(20 * time.Millisecond)
		links.set("net2")
		att.answers <- nil
	}()
	if err := create(p, pod); err != nil {
		t.Fatalf("CreateContainer after the attach: %v", err)
	}
	if n := a.started(); n != 1 {
		t.Errorf("%d attaches started, want 1 (RunPodSandbox's)", n)
	}
	var refused dto.Metric
	if err := m.refused.Write(&refused); err != nil || refused.GetCounter().GetValue() != 2 {
		t.Errorf("refused counter = %v (%v), want 2", refused.GetCounter().GetValue(), err)
	}
	_ = p.RemovePodSandbox(context.Background(), pod)
	time.Sleep(10 * time.Millisecond)
	att.mu.Lock()
	defer att.mu.Unlock()
	if !att.closed {
		t.Error("the attach was not closed with its sandbox")
	}
}

func TestFailedStartRetriedByNextContainer(t *testing.T) {
	att := &fakeAttach{answers: make(chan error, 1)}
	a := &fakeAttacher{att: att, err: errors.New("pod not in the cache")}
	p := newTestPlugin(a, &fakeLinks{links: map[string]bool{"net1": true, "net2": true}})
	pod := sandbox(approved, "/var/run/netns/x")
	_ = p.RunPodSandbox(context.Background(), pod)
	if err := create(p, pod); err == nil || !strings.Contains(err.Error(), "pod not in the cache") {
		t.Fatalf("CreateContainer = %v, want the start's error", err)
	}
	a.mu.Lock()
	a.err = nil
	a.mu.Unlock()
	att.answers <- nil
	if err := create(p, pod); err != nil {
		t.Fatalf("CreateContainer once the attach starts: %v", err)
	}
	if n := a.started(); n != 2 {
		t.Errorf("%d starts, want 2", n)
	}
}

func TestStartedAfterAgentRestart(t *testing.T) {
	// No RunPodSandbox seen (the agent was away): CreateContainer starts
	// the attach itself.
	att := &fakeAttach{answers: make(chan error, 1)}
	a := &fakeAttacher{att: att}
	p := newTestPlugin(a, &fakeLinks{links: map[string]bool{}})
	pod := sandbox(approved, "/var/run/netns/x")
	if err := create(p, pod); err == nil {
		t.Fatal("container admitted without its interfaces")
	}
	if n := a.started(); n != 1 {
		t.Errorf("%d starts, want 1", n)
	}
	// Synchronize without the sandbox forgets it.
	if _, err := p.Synchronize(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	n := len(p.sandboxes)
	p.mu.Unlock()
	if n != 0 {
		t.Errorf("%d sandboxes kept after a Synchronize without them", n)
	}
}

// TestNamesAloneNeverAdmit: every approved name in the netns admits no
// container until the reconciler answered success (the names may be a
// half-built attach); then the pod's later containers are admitted at
// once, and a failure is refused with its reason.
func TestNamesAloneNeverAdmit(t *testing.T) {
	att := &fakeAttach{answers: make(chan error, 1)}
	a := &fakeAttacher{att: att}
	links := &fakeLinks{links: map[string]bool{"lo": true, "eth0": true, "net1": true, "net2": true}}
	p := newTestPlugin(a, links)
	pod := sandbox(approved, "/var/run/netns/x")
	_ = p.RunPodSandbox(context.Background(), pod)
	if err := create(p, pod); err == nil || !strings.Contains(err.Error(), "networks not ready") || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("CreateContainer with the names but no answer = %v, want a refusal", err)
	}
	att.answers <- errors.New("address 10.1.0.5 taken")
	if err := create(p, pod); err == nil || !strings.Contains(err.Error(), "address 10.1.0.5 taken") {
		t.Fatalf("CreateContainer after a failed attach = %v, want a refusal with the reason", err)
	}
	att.answers <- nil
	if err := create(p, pod); err != nil {
		t.Fatalf("CreateContainer after the attach succeeded: %v", err)
	}
	// No answer is left: the second container is admitted on the first's.
	if err := create(p, pod); err != nil {
		t.Fatalf("second container: %v", err)
	}
	// An interface lost since: refused, and the next waits for a new answer.
	links.mu.Lock()
	delete(links.links, "net2")
	links.mu.Unlock()
	if err := create(p, pod); err == nil || !strings.Contains(err.Error(), "net2") {
		t.Fatalf("CreateContainer with net2 gone = %v, want a refusal naming net2", err)
	}
	links.set("net2")
	if err := create(p, pod); err == nil {
		t.Fatal("admitted on names alone after an interface was lost")
	}
}

// TestPendingAttachGetsTheWaitHook: with a wait hook on the node, a
// container whose attach has not answered within CreateWait is created
// with the hook (an OCI createRuntime hook waiting for every approved
// interface, for HookTimeout, with the runtime's kill timeout above it),
// not refused; a failed attach is still refused; an attached pod gets no
// hook.
func TestPendingAttachGetsTheWaitHook(t *testing.T) {
	att := &fakeAttach{answers: make(chan error, 1)}
	a := &fakeAttacher{att: att}
	links := &fakeLinks{links: map[string]bool{"lo": true}}
	p := newTestPlugin(a, links)
	p.Hook, p.HookTimeout = "/opt/podnet/bin/podnet-wait", 30*time.Second
	m := withMetrics(t, p)
	pod := sandbox(approved, "/var/run/netns/x")
	if err := p.RunPodSandbox(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	adj, _, err := p.CreateContainer(context.Background(), pod, &api.Container{Name: "app"})
	if err != nil {
		t.Fatalf("CreateContainer of a pending attach: %v, want the hook", err)
	}
	hooks := adj.GetHooks().GetCreateRuntime()
	want := []string{"/opt/podnet/bin/podnet-wait", "hook", "--interfaces", "net1,net2", "--timeout", "30s"}
	if len(hooks) != 1 || hooks[0].GetPath() != want[0] || strings.Join(hooks[0].GetArgs(), " ") != strings.Join(want, " ") ||
		hooks[0].GetTimeout().GetValue() != 35 {
		t.Fatalf("adjustment hooks %v, want one createRuntime hook %v with timeout 35", hooks, want)
	}
	att.mu.Lock()
	again := att.again
	att.mu.Unlock()
	if again != 0 {
		t.Errorf("a hooked container enqueued the pod again %d times; it is under way", again)
	}
	// A failed attach is the agent's no: refused, as without the hook.
	att.answers <- errors.New("address 10.1.0.5 taken")
	if err := create(p, pod); err == nil || !strings.Contains(err.Error(), "address 10.1.0.5 taken") {
		t.Fatalf("CreateContainer of a failed attach = %v, want the refusal", err)
	}
	// Attached: no hook.
	links.set("net1", "net2")
	att.answers <- nil
	adj, _, err = p.CreateContainer(context.Background(), pod, &api.Container{Name: "app"})
	if err != nil || len(adj.GetHooks().GetCreateRuntime()) != 0 {
		t.Fatalf("CreateContainer of an attached pod: %v, hooks %v; want neither", err, adj.GetHooks())
	}
	var hooked, refused dto.Metric
	if err := m.hooked.Write(&hooked); err != nil || hooked.GetCounter().GetValue() != 1 {
		t.Errorf("hooked counter = %v (%v), want 1", hooked.GetCounter().GetValue(), err)
	}
	if err := m.refused.Write(&refused); err != nil || refused.GetCounter().GetValue() != 1 {
		t.Errorf("refused counter = %v (%v), want 1", refused.GetCounter().GetValue(), err)
	}
}

// withMetrics gives p metrics of a registry of its own.
func withMetrics(t *testing.T, p *Plugin) *Metrics {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	p.Metrics = m
	return m
}
