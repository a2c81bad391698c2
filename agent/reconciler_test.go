package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/agent/sandbox"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/cri"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/pkg/policy"
)

// Fakes of the seams, recording what the reconciler asked for.

type fakeSandboxes struct {
	mu    sync.Mutex
	netns map[string]string   // uid → path; absent = no sandbox
	ips   map[string][]string // uid → the runtime's eth0 addresses
}

func (f *fakeSandboxes) Sandbox(_ context.Context, uid string) (cri.Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.netns[uid]
	if !ok {
		return cri.Sandbox{}, fmt.Errorf("pod %q: %w", uid, cri.ErrNoSandbox)
	}
	return cri.Sandbox{ID: "sb-" + uid, NetNS: p, Created: time.Now(), IPs: f.ips[uid]}, nil
}

type fakeDataplane struct {
	applied  []dataplane.Pod
	detached []string // "uid netns"
	applyErr error
	onApply  func() // runs within Apply, while it builds
}

func (f *fakeDataplane) Apply(_ context.Context, p dataplane.Pod) ([]dataplane.InterfaceStatus, error) {
	f.applied = append(f.applied, p)
	if f.onApply != nil {
		f.onApply()
	}
	if f.applyErr != nil {
		return nil, f.applyErr
	}
	var out []dataplane.InterfaceStatus
	for _, ifc := range p.Interfaces {
		st := dataplane.InterfaceStatus{Name: ifc.Name, MAC: "02:00:00:00:00:01", MTU: max(ifc.MTU, 1500)}
		for _, a := range ifc.Addresses {
			st.IPs = append(st.IPs, a.String())
		}
		out = append(out, st)
	}
	return out, nil
}

func (f *fakeDataplane) Detach(_ context.Context, uid, netns string) error {
	f.detached = append(f.detached, uid+" "+netns)
	return nil
}

func (f *fakeDataplane) CollectGarbage(context.Context, func(string) bool) ([]string, error) {
	return nil, nil
}

type fakeAddresses struct {
	mu       sync.Mutex // Ensure runs once per interface, at once
	released []string   // "uid network iface"
	ensured  []string
	err      error
	// together, when set, holds each Ensure until that many are in
	// flight, and fails one that waits 10 s for the others.
	together int
	all      chan struct{}
	// during, when set, runs inside Ensure (what happens meanwhile).
	during func()
}

func (f *fakeAddresses) Ensure(_ context.Context, pod *corev1.Pod, ai v1alpha1.ApprovedInterface) ([]net.IPNet, error) {
	f.mu.Lock()
	f.ensured = append(f.ensured, ai.Network+" "+ai.Interface)
	if f.together > 0 && len(f.ensured) == f.together {
		close(f.all)
	}
	f.mu.Unlock()
	if f.during != nil {
		f.during()
	}
	if f.together > 0 {
		select {
		case <-f.all:
		case <-time.After(10 * time.Second):
			return nil, errors.New("ensured one interface at a time")
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	return []net.IPNet{{IP: net.ParseIP("192.168.100.7").To4(), Mask: net.CIDRMask(24, 32)}}, nil
}

func (f *fakeAddresses) Release(_ context.Context, pod podstate.Ref, network, iface string) error {
	f.released = append(f.released, strings.TrimSpace(pod.UID+" "+network+" "+iface))
	return nil
}

// fakeVerifier accepts the approval JSON of a pod when its signature
// annotation is "good"; the real verifier has its own tests.
type fakeVerifier struct{ approvals map[string]*v1alpha1.Approval }

func (f fakeVerifier) Verify(pod *corev1.Pod) (*v1alpha1.Approval, error) {
	if pod.Annotations[v1alpha1.ApprovedSignatureAnnotation] != "good" {
		return nil, errors.New("approval signature does not verify")
	}
	return f.approvals[pod.Annotations[v1alpha1.ApprovedAnnotation]], nil
}

// fakeGrants revokes what it is told to; the real check (CachedGrants and
// policy.Revoked) has its own tests.
type fakeGrants struct{ revoked []policy.Revocation }

func (f *fakeGrants) Revoked(context.Context, *corev1.Pod, *v1alpha1.Approval) ([]policy.Revocation, error) {
	return f.revoked, nil
}

type event struct{ Type, Reason, Note string }

type fakeEvents struct{ events []event }

func (f *fakeEvents) Eventf(_, _ runtime.Object, eventtype, reason, _ string, note string, args ...any) {
	f.events = append(f.events, event{eventtype, reason, fmt.Sprintf(note, args...)})
}

func (f *fakeEvents) has(typ, reason string) bool {
	for _, e := range f.events {
		if e.Type == typ && e.Reason == reason {
			return true
		}
	}
	return false
}

type harness struct {
	r      *Reconciler
	c      client.Client
	sb     *fakeSandboxes
	dp     *fakeDataplane
	ip     *fakeAddresses
	grants *fakeGrants
	events *fakeEvents
}

const node = "node-1"

var twoNetworks = &v1alpha1.Approval{Namespace: "tenant", Interfaces: []v1alpha1.ApprovedInterface{
	{Interface: "net1", Network: "data", Kind: v1alpha1.KindBridge, Bridge: "pnbr-data", IPAM: &v1alpha1.ApprovedIPAM{Pools: []string{"192.168.100.0/24"}}},
	{Interface: "net2", Network: "uplink", Kind: v1alpha1.KindMacvlan, Master: "eth1"},
}}

var oneNetwork = &v1alpha1.Approval{Namespace: "tenant", Interfaces: twoNetworks.Interfaces[:1]}

var twoWithAddresses = &v1alpha1.Approval{Namespace: "tenant", Interfaces: []v1alpha1.ApprovedInterface{
	twoNetworks.Interfaces[0],
	{Interface: "net2", Network: "storage", Kind: v1alpha1.KindBridge, Bridge: "pnbr-st", IPAM: &v1alpha1.ApprovedIPAM{Pools: []string{"192.168.200.0/24"}}},
}}

func newHarness(t *testing.T, objs ...client.Object) *harness {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// Profiles are read from the cache for the interfaces' policy floors.
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// The API server keeps metadata changes made through pods/status (its
	// status strategy resets only spec and owners); the fake client keeps
	// only the status part, so a status patch is applied to the pod's
	// metadata too, as the real server does. test/agent and
	// TestIntegrationAgentPodStartAndSteadyStateCost write to a real one.
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&corev1.Pod{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := c.SubResource(sub).Patch(ctx, obj, patch, opts...); err != nil || sub != "status" {
				return err
			}
			return c.Patch(ctx, obj, patch)
		}}).Build()
	h := &harness{c: c, sb: &fakeSandboxes{netns: map[string]string{}}, dp: &fakeDataplane{}, ip: &fakeAddresses{}, grants: &fakeGrants{}, events: &fakeEvents{}}
	h.r = &Reconciler{
		Client: c, Events: h.events, NodeName: node, Sandboxes: h.sb, Dataplane: h.dp, Addresses: h.ip,
		Verifier: fakeVerifier{approvals: map[string]*v1alpha1.Approval{"two": twoNetworks, "one": oneNetwork, "both": twoWithAddresses}},
		Grants:   h.grants,
		Resync:   30 * time.Second,
	}
	return h
}

func newPod(name, approval, sig string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: name, UID: types.UID("uid-" + name), Annotations: map[string]string{
			v1alpha1.NetworksAnnotation: "data, uplink", v1alpha1.ApprovedAnnotation: approval, v1alpha1.ApprovedSignatureAnnotation: sig,
		}},
		Spec:   corev1.PodSpec{NodeName: node, ReadinessGates: []corev1.PodReadinessGate{{ConditionType: v1alpha1.NetworksReadyCondition}}},
		Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "10.244.0.9"}}},
	}
}

func (h *harness) reconcile(t *testing.T, name string) (reconcile.Result, error) {
	t.Helper()
	return h.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "tenant", Name: name}})
}

func (h *harness) get(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	var p corev1.Pod
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: "tenant", Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func condition(t *testing.T, p *corev1.Pod) corev1.PodCondition {
	t.Helper()
	c := podstate.FindCondition(p)
	if c == nil {
		t.Fatalf("pod %s has no %s condition; conditions: %+v", p.Name, v1alpha1.NetworksReadyCondition, p.Status.Conditions)
	}
	return *c
}

// TestReconcileReservesEveryInterfacesAddressesAtOnce: the claims of a
// pod's interfaces are created side by side, not one after the other.
func TestReconcileReservesEveryInterfacesAddressesAtOnce(t *testing.T) {
	h := newHarness(t, newPod("p", "both", "good"))
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	h.ip.together, h.ip.all = 2, make(chan struct{})
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if got := h.dp.applied; len(got) != 1 || len(got[0].Interfaces) != 2 || len(got[0].Interfaces[1].Addresses) != 1 {
		t.Fatalf("applied %+v, want both interfaces with their address", got)
	}
}

func TestReconcileAttachesApprovedNetworks(t *testing.T) {
	h := newHarness(t, newPod("p", "two", "good"))
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	h.r.ClusterNetwork, h.r.MultusStatus = "kindnet", true
	res, err := h.reconcile(t, "p")
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != 30*time.Second || res.Priority == nil || *res.Priority != podstate.PriorityResync {
		t.Errorf("requeue after %v at priority %v, want the resync period behind other work", res.RequeueAfter, res.Priority)
	}
	if len(h.dp.applied) != 1 {
		t.Fatalf("applied %d times, want once", len(h.dp.applied))
	}
	got := h.dp.applied[0]
	if got.UID != "uid-p" || got.NetNS != "/var/run/netns/cni-p" || len(got.Interfaces) != 2 || got.Interfaces[0].Addresses[0].String() != "192.168.100.7/24" {
		t.Fatalf("applied %+v", got)
	}
	if want := []string{"data net1"}; fmt.Sprint(h.ip.ensured) != fmt.Sprint(want) {
		t.Errorf("ensured %v, want %v (net2 has no IPAM)", h.ip.ensured, want)
	}
	p := h.get(t, "p")
	c := condition(t, p)
	if c.Status != corev1.ConditionTrue || c.Reason != v1alpha1.ReasonAttached || !strings.Contains(c.Message, "net2 (tenant/uplink)") {
		t.Fatalf("condition = %+v", c)
	}
	st := podstate.DecodeStatus(p.Annotations[v1alpha1.NetworkStatusAnnotation])
	if len(st) != 3 || st[1].Name != "tenant/data" || st[1].IPs[0] != "192.168.100.7" || st[2].Interface != "net2" {
		t.Fatalf("network-status = %s", p.Annotations[v1alpha1.NetworkStatusAnnotation])
	}
	if want := (v1alpha1.NetworkStatus{Name: "kindnet", Interface: "eth0", IPs: []string{"10.244.0.9"}, Default: true}); !reflect.DeepEqual(st[0], want) {
		t.Fatalf("default entry = %+v, want %+v", st[0], want)
	}
	if m := p.Annotations[v1alpha1.MultusNetworkStatusAnnotation]; m != p.Annotations[v1alpha1.NetworkStatusAnnotation] {
		t.Fatalf("%s = %s, want the same as %s", v1alpha1.MultusNetworkStatusAnnotation, m, v1alpha1.NetworkStatusAnnotation)
	}
	if !h.events.has(corev1.EventTypeNormal, v1alpha1.ReasonAttached) {
		t.Errorf("events %+v, want a Normal %s", h.events.events, v1alpha1.ReasonAttached)
	}

	// A second pass changes nothing and says nothing new.
	rv := p.ResourceVersion
	n := len(h.events.events)
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if p2 := h.get(t, "p"); p2.ResourceVersion != rv {
		t.Errorf("second reconcile wrote the pod (resourceVersion %s → %s)", rv, p2.ResourceVersion)
	}
	if len(h.events.events) != n {
		t.Errorf("second reconcile emitted %+v", h.events.events[n:])
	}
}

// TestReconcileWritesEth0FromTheSandboxOnce: a pod whose kubelet has not
// reported its IPs yet gets the runtime's addresses in its first status
// write, and the kubelet's report of the same addresses costs no write.
func TestReconcileWritesEth0FromTheSandboxOnce(t *testing.T) {
	pod := newPod("p", "one", "good")
	pod.Status.PodIPs = nil
	h := newHarness(t, pod)
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	h.sb.ips = map[string][]string{"uid-p": {"10.244.0.9", "fd00:10:244::9"}}
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	p := h.get(t, "p")
	want := v1alpha1.NetworkStatus{Name: v1alpha1.DefaultClusterNetworkName, Interface: "eth0", IPs: []string{"10.244.0.9", "fd00:10:244::9"}, Default: true}
	if st := podstate.DecodeStatus(p.Annotations[v1alpha1.NetworkStatusAnnotation]); len(st) != 2 || !reflect.DeepEqual(st[0], want) {
		t.Fatalf("network-status = %s, want the default entry %+v first", p.Annotations[v1alpha1.NetworkStatusAnnotation], want)
	}

	// The kubelet reports the pod's IPs (its own status write).
	p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.0.9"}, {IP: "fd00:10:244::9"}}
	if err := h.c.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	rv := h.get(t, "p").ResourceVersion
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if got := h.get(t, "p").ResourceVersion; got != rv {
		t.Fatalf("the kubelet's report of the same IPs made the agent write the pod again (resourceVersion %s → %s)", rv, got)
	}
}

func TestReconcileWaitsForSandboxWithBackoff(t *testing.T) {
	h := newHarness(t, newPod("p", "two", "good"))
	var delays []time.Duration
	for range 4 {
		res, err := h.reconcile(t, "p")
		if err != nil {
			t.Fatal(err)
		}
		delays = append(delays, res.RequeueAfter)
	}
	if delays[0] != sandboxRetryFirst || delays[1] <= delays[0] || delays[3] <= delays[2] {
		t.Fatalf("retry delays %v, want growing from %v", delays, sandboxRetryFirst)
	}
	// The address is reserved at once (the sandbox must not wait for its
	// claim's create later); the interfaces wait for the sandbox.
	if len(h.dp.applied) != 0 || len(h.ip.ensured) == 0 {
		t.Fatalf("before the sandbox existed: applied %v, reserved %v; want addresses only", h.dp.applied, h.ip.ensured)
	}
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if len(h.dp.applied) != 1 {
		t.Fatal("not applied once the sandbox appeared")
	}
}

// TestReconcileOfAnNRIHeldPodWaitsForTheRuntimesRequest: a pod held by
// NRI whose sandbox does not exist yet waits for the runtime's NRI
// request while the plugin is connected, and in the node-wide sandbox
// poll otherwise, as every other pod does.
func TestReconcileOfAnNRIHeldPodWaitsForTheRuntimesRequest(t *testing.T) {
	for _, tc := range []struct {
		name       string
		held, asks bool
		wantPolled bool
	}{
		{name: "held, plugin connected", held: true, asks: true},
		{name: "held, plugin away", held: true, wantPolled: true},
		{name: "not held by NRI", asks: true, wantPolled: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("p", "two", "good")
			if tc.held {
				pod.Annotations[v1alpha1.NRIRequiredPluginsAnnotation] = v1alpha1.NRIRequiredPluginsValue
			}
			h := newHarness(t, pod)
			h.r.Attaches = &sandbox.Handshake{}
			waits := sandbox.NewWatch(nil, time.Second)
			h.r.SandboxWaits = waits
			h.r.NRIAsks = func() bool { return tc.asks }
			res, err := h.reconcile(t, "p")
			if err != nil {
				t.Fatal(err)
			}
			if res.RequeueAfter != 0 {
				t.Errorf("requeued after %s: want none (woken instead)", res.RequeueAfter)
			}
			if polled := waits.Waiting() == 1; polled != tc.wantPolled {
				t.Errorf("waits in the sandbox poll: %v, want %v", polled, tc.wantPolled)
			}
		})
	}
}

// TestReconcileTakesARequestMadeWhileClaiming: the runtime's request for
// the sandbox (NRI's RunPodSandbox, the CNI plugin's ADD) that arrives
// while a reconcile begun before it reserves the addresses is attached by
// that reconcile and answered, not left to the next one.
func TestReconcileTakesARequestMadeWhileClaiming(t *testing.T) {
	h := newHarness(t, newPod("p", "two", "good"))
	setups := &requestDuring{}
	h.r.Attaches = setups
	h.ip.during = func() {
		setups.request("uid-p", cri.Sandbox{ID: "sb-p", NetNS: "/var/run/netns/cni-p", Created: time.Now()})
	}
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if len(h.dp.applied) != 1 || h.dp.applied[0].NetNS != "/var/run/netns/cni-p" {
		t.Fatalf("applied %+v, want once in the requested sandbox's netns", h.dp.applied)
	}
	if got := setups.answers(); len(got) != 1 || got[0] != "uid-p sb-p <nil>" {
		t.Fatalf("answers %q, want the request answered once, with no error", got)
	}
}

// requestDuring is a sandbox-setup path where one request arrives while
// the reconcile runs (request); it records the reconcile's answers.
type requestDuring struct {
	mu       sync.Mutex
	hints    map[string]cri.Sandbox
	answered []string
}

func (s *requestDuring) request(uid string, sb cri.Sandbox) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hints == nil {
		s.hints = map[string]cri.Sandbox{}
	}
	s.hints[uid] = sb
}

func (s *requestDuring) Sandbox(uid string) (cri.Sandbox, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.hints[uid]
	return sb, ok
}

func (s *requestDuring) Unanswered(uid string) (time.Time, bool) {
	sb, ok := s.Sandbox(uid)
	return sb.Created, ok
}

func (s *requestDuring) Answer(uid, sandbox string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.hints[uid]; ok {
		s.answered = append(s.answered, fmt.Sprintf("%s %s %v", uid, sandbox, err))
	}
}

func (s *requestDuring) answers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.answered)
}

func (s *requestDuring) Source() source.Source { return nil }

func TestReconcileRefusesInvalidApproval(t *testing.T) {
	h := newHarness(t, newPod("p", "two", "forged"))
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if len(h.dp.applied) != 0 || len(h.ip.ensured) != 0 {
		t.Fatalf("configured something for a forged approval: applied %v, ensured %v", h.dp.applied, h.ip.ensured)
	}
	c := condition(t, h.get(t, "p"))
	if c.Status != corev1.ConditionFalse || c.Reason != v1alpha1.ReasonInvalidApproval || !strings.Contains(c.Message, "does not verify") {
		t.Fatalf("condition = %+v", c)
	}
	if !h.events.has(corev1.EventTypeWarning, v1alpha1.ReasonInvalidApproval) {
		t.Fatalf("events %+v, want a Warning %s", h.events.events, v1alpha1.ReasonInvalidApproval)
	}
}

func TestReconcileInvalidatedApprovalRemovesWhatWasBuilt(t *testing.T) {
	h := newHarness(t, newPod("p", "two", "good"))
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	p := h.get(t, "p")
	p.Annotations[v1alpha1.ApprovedSignatureAnnotation] = "tampered"
	if err := h.c.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(h.dp.detached) != "[uid-p /var/run/netns/cni-p]" || fmt.Sprint(h.ip.released) != "[uid-p]" {
		t.Fatalf("detached %v released %v, want the pod's netns detached and all its addresses released", h.dp.detached, h.ip.released)
	}
	p = h.get(t, "p")
	if p.Annotations[v1alpha1.NetworkStatusAnnotation] != "[]" || condition(t, p).Reason != v1alpha1.ReasonInvalidApproval {
		t.Fatalf("status %q condition %+v", p.Annotations[v1alpha1.NetworkStatusAnnotation], condition(t, p))
	}
}

func TestReconcileApplyFailureIsReported(t *testing.T) {
	h := newHarness(t, newPod("p", "two", "good"))
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	h.dp.applyErr = errors.New(`interface "net2": master "eth1": link not found`)
	if _, err := h.reconcile(t, "p"); err == nil {
		t.Fatal("want the apply error returned, for a rate-limited retry")
	}
	c := condition(t, h.get(t, "p"))
	if c.Status != corev1.ConditionFalse || c.Reason != v1alpha1.ReasonAttachFailed || !strings.Contains(c.Message, `master "eth1"`) {
		t.Fatalf("condition = %+v", c)
	}
	if !h.events.has(corev1.EventTypeWarning, v1alpha1.ReasonAttachFailed) {
		t.Fatalf("events %+v", h.events.events)
	}
}

func TestReconcileIPAMFailureConfiguresNothing(t *testing.T) {
	h := newHarness(t, newPod("p", "two", "good"))
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	h.ip.err = errors.New("pool 192.168.100.0/24 exhausted")
	if _, err := h.reconcile(t, "p"); err == nil {
		t.Fatal("want an error")
	}
	if len(h.dp.applied) != 0 {
		t.Fatal("applied without addresses")
	}
	if c := condition(t, h.get(t, "p")); c.Reason != v1alpha1.ReasonIPAMFailed || !strings.Contains(c.Message, "exhausted") {
		t.Fatalf("condition = %+v", c)
	}
}

func TestReconcileDroppedNetworkReleasesItsAddresses(t *testing.T) {
	two := &v1alpha1.Approval{Namespace: "tenant", Interfaces: []v1alpha1.ApprovedInterface{
		twoNetworks.Interfaces[0],
		{Interface: "net2", Network: "other", Kind: v1alpha1.KindBridge, Bridge: "pnbr-o", IPAM: &v1alpha1.ApprovedIPAM{Pools: []string{"10.9.0.0/24"}}},
	}}
	h := newHarness(t, newPod("p", "two", "good"))
	h.r.Verifier = fakeVerifier{approvals: map[string]*v1alpha1.Approval{"two": two, "one": oneNetwork}}
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	p := h.get(t, "p")
	p.Annotations[v1alpha1.ApprovedAnnotation] = "one"
	if err := h.c.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(h.ip.released) != "[uid-p other net2]" {
		t.Fatalf("released %v, want only network other on net2", h.ip.released)
	}
	if last := h.dp.applied[len(h.dp.applied)-1]; len(last.Interfaces) != 1 {
		t.Fatalf("last apply %+v, want only net1", last)
	}
	if st := podstate.DecodeStatus(h.get(t, "p").Annotations[v1alpha1.NetworkStatusAnnotation]); len(st) != 2 || !st[0].Default {
		t.Fatalf("status %+v, want the default entry and one more", st)
	}
}

func TestReconcileDeletedPodIsCleanedUp(t *testing.T) {
	pod := newPod("p", "two", "good")
	h := newHarness(t, pod)
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Delete(context.Background(), h.get(t, "p")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(h.dp.detached) != "[uid-p /var/run/netns/cni-p]" || fmt.Sprint(h.ip.released) != "[uid-p]" {
		t.Fatalf("detached %v released %v", h.dp.detached, h.ip.released)
	}
	if pods, ifs := h.r.counts(); pods != 0 || ifs != 0 {
		t.Fatalf("still managing %d pods %d interfaces", pods, ifs)
	}
}

func TestReconcileRequestRemoved(t *testing.T) {
	h := newHarness(t, newPod("p", "two", "good"))
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	p := h.get(t, "p")
	for _, k := range []string{v1alpha1.NetworksAnnotation, v1alpha1.ApprovedAnnotation, v1alpha1.ApprovedSignatureAnnotation} {
		delete(p.Annotations, k)
	}
	if err := h.c.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if len(h.dp.detached) != 1 || fmt.Sprint(h.ip.released) != "[uid-p]" {
		t.Fatalf("detached %v released %v", h.dp.detached, h.ip.released)
	}
	p = h.get(t, "p")
	c := condition(t, p)
	if p.Annotations[v1alpha1.NetworkStatusAnnotation] != "[]" || c.Status != corev1.ConditionTrue || c.Reason != v1alpha1.ReasonNoNetworks {
		t.Fatalf("status %q condition %+v: the readiness gate must stay satisfied", p.Annotations[v1alpha1.NetworkStatusAnnotation], c)
	}
	if !h.events.has(corev1.EventTypeNormal, v1alpha1.ReasonDetached) {
		t.Fatalf("events %+v", h.events.events)
	}
}

func TestReconcileLeavesOtherPodsAlone(t *testing.T) {
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "plain", UID: "uid-plain"}, Spec: corev1.PodSpec{NodeName: node}}
	elsewhere := newPod("elsewhere", "two", "good")
	elsewhere.Spec.NodeName = "node-2"
	hostnet := newPod("hostnet", "two", "good")
	hostnet.Spec.HostNetwork = true
	h := newHarness(t, plain, elsewhere, hostnet)
	for _, name := range []string{"plain", "elsewhere", "hostnet", "absent"} {
		if _, err := h.reconcile(t, name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if name != "absent" {
			if p := h.get(t, name); podstate.FindCondition(p) != nil || p.Annotations[v1alpha1.NetworkStatusAnnotation] != "" {
				t.Fatalf("pod %s was written to: %+v", name, p)
			}
		}
	}
	if len(h.dp.applied)+len(h.dp.detached)+len(h.ip.ensured)+len(h.ip.released)+len(h.events.events) != 0 {
		t.Fatalf("touched pods that are not ours: %+v %+v %+v", h.dp, h.ip, h.events.events)
	}
}

func TestReconcileTerminatingPodIsDetachedWithoutStatusWrites(t *testing.T) {
	h := newHarness(t, newPod("p", "two", "good"))
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	p := h.get(t, "p")
	p.Status.Phase = corev1.PodSucceeded
	if err := h.c.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	rv := h.get(t, "p").ResourceVersion
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if len(h.dp.detached) != 1 || fmt.Sprint(h.ip.released) != "[uid-p]" {
		t.Fatalf("detached %v released %v", h.dp.detached, h.ip.released)
	}
	if h.get(t, "p").ResourceVersion != rv {
		t.Fatal("wrote to a finished pod")
	}
}

func TestReconcileRevokedNetworkIsDetachedPodKeepsTheRest(t *testing.T) {
	h := newHarness(t, newPod("p", "two", "good"))
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	// The admin takes network "data" (net1, with an address) away.
	h.grants.revoked = []policy.Revocation{{Interface: "net1", Network: "data", Reason: `profile "telco" no longer offers network "data"`}}
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if last := h.dp.applied[len(h.dp.applied)-1]; len(last.Interfaces) != 1 || last.Interfaces[0].Name != "net2" {
		t.Fatalf("last apply %+v, want only net2", last)
	}
	if !slices.Contains(h.ip.released, "uid-p data net1") {
		t.Fatalf("released %v, want the claim of net1", h.ip.released)
	}
	p := h.get(t, "p")
	var podnetEntries []string
	for _, e := range podstate.DecodeStatus(p.Annotations[v1alpha1.NetworkStatusAnnotation]) {
		if !e.Default {
			podnetEntries = append(podnetEntries, e.Interface)
		}
	}
	if fmt.Sprint(podnetEntries) != "[net2]" {
		t.Fatalf("network-status %s, want only net2", p.Annotations[v1alpha1.NetworkStatusAnnotation])
	}
	c := condition(t, p)
	if c.Status != corev1.ConditionFalse || c.Reason != v1alpha1.ReasonGrantRevoked ||
		!strings.Contains(c.Message, `net1 (network "data"): profile "telco" no longer offers network "data"`) || !strings.Contains(c.Message, "still attached: net2") {
		t.Fatalf("condition %+v", c)
	}
	if !h.events.has(corev1.EventTypeWarning, v1alpha1.ReasonGrantRevoked) {
		t.Fatalf("events %+v, want a Warning %s", h.events.events, v1alpha1.ReasonGrantRevoked)
	}
	// Said once: the next pass changes nothing and emits nothing.
	n := len(h.events.events)
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if len(h.events.events) != n {
		t.Errorf("second pass emitted %+v", h.events.events[n:])
	}
	if len(h.dp.detached) != 0 {
		t.Errorf("the whole pod was detached: %v", h.dp.detached)
	}
}

func TestReconcileWholeGrantRevokedDetachesEverything(t *testing.T) {
	h := newHarness(t, newPod("p", "two", "good"))
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	why := `namespace "tenant" is no longer opted in (label podnet.io/enabled=true)`
	h.grants.revoked = []policy.Revocation{{Interface: "net1", Network: "data", Reason: why}, {Interface: "net2", Network: "uplink", Reason: why}}
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if last := h.dp.applied[len(h.dp.applied)-1]; len(last.Interfaces) != 0 {
		t.Fatalf("applied %+v, want no interface", last)
	}
	if len(h.ip.ensured) != 0 {
		t.Fatalf("reserved addresses %v for a revoked grant", h.ip.ensured)
	}
	c := condition(t, h.get(t, "p"))
	if c.Status != corev1.ConditionFalse || c.Reason != v1alpha1.ReasonGrantRevoked || !strings.Contains(c.Message, why) {
		t.Fatalf("condition %+v", c)
	}
}

func TestReconcileWithoutGrantCheckRefuses(t *testing.T) {
	h := newHarness(t, newPod("p", "two", "good"))
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	h.r.Grants = nil
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if len(h.dp.applied) != 0 {
		t.Fatalf("applied %+v without a grant check", h.dp.applied)
	}
	if c := condition(t, h.get(t, "p")); c.Reason != v1alpha1.ReasonInvalidApproval || !strings.Contains(c.Message, "no grant check") {
		t.Fatalf("condition %+v", c)
	}
}

// TestReconcileQuotaExceededWaits: a pod over its namespace's quota gets
// the QuotaExceeded condition and a warning Event, configures nothing, and
// is tried again after the allocator's backoff rather than at once.
func TestReconcileQuotaExceededWaits(t *testing.T) {
	h := newHarness(t, newPod("p", "two", "good"))
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	h.ip.err = fmt.Errorf("network %q interface %q: %w", "data", "net1",
		&ipam.QuotaExceededError{Network: "data", Namespace: "tenant", Pool: "192.168.100.0/24", Max: 2, RetryAfter: 3 * time.Second})
	res, err := h.reconcile(t, "p")
	if err != nil {
		t.Fatalf("want a timed retry, not an error: %v", err)
	}
	if res.RequeueAfter != 3*time.Second {
		t.Fatalf("requeue after %v, want the allocator's 3s", res.RequeueAfter)
	}
	if len(h.dp.applied) != 0 {
		t.Fatal("applied without addresses")
	}
	c := condition(t, h.get(t, "p"))
	if c.Status != corev1.ConditionFalse || c.Reason != v1alpha1.ReasonQuotaExceeded || !strings.Contains(c.Message, "ipam.maxAddressesPerNamespace") {
		t.Fatalf("condition = %+v", c)
	}
	if !h.events.has(corev1.EventTypeWarning, v1alpha1.ReasonQuotaExceeded) {
		t.Fatalf("events %+v", h.events.events)
	}
}
