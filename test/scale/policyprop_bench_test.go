//go:build bench

package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/netpolicy"
	"podnet.io/podnet/test/bench"
	"podnet.io/podnet/test/testenv"
)

// The policy propagation bench's cluster: its pods on one bridge network
// of one profile, spread over ppNamespaces namespaces (pod i in
// ns-<i mod 10>) and the nodes (so that every namespace has pods on
// every node), each namespace in tenant t0 or t1 (even or odd). Every
// namespace but the last has a MultiNetworkPolicy for the network: its
// pods take TCP 80 from the pods of its tenant's namespaces, and 9090
// from its own app=a0 pods; the last namespace's pods are isolated by
// the floor alone, when there is one.
const (
	ppNamespaces = 10
	ppProfile    = "bench-policies"
	ppNetwork    = "data"
	ppTenant     = "tenant"
	ppPolicy     = "tenant-in"
	ppInterface  = "net1"
)

// TestBenchPolicyPropagation measures how long a policy change takes to
// reach every node it affects, at 1,000 pods over 50 nodes (100 over 10
// at the smallest size): the real controller (in this process) against a
// real API server, the nodes being their NodePolicies only. It makes K
// changes one at a time, alternating an update of ns-0's policy (its
// tenant port, 80 or 8080) and a move of ns-1 between the tenants (a
// namespace label ns-0's policy selects on); both change the verdicts of
// ns-0's pods, which sit on every node. Each change's time runs from the
// write's return to the NodePolicy event that shows the last node's new
// spec, read back as its agent does (netpolicy.ReadNodeSpec). It prints
// the p50 and p99, and per change the NodePolicy writes, the controller's
// passes and their time, this process's CPU time (the controller's and
// the bench's own watch) and the API server's; then the same for K/2
// changes with a policy floor on the network (ingress from the same
// tenant), which every pod's verdict then depends on.
func TestBenchPolicyPropagation(t *testing.T) {
	pods, nodes, changes := bench.Size(1000, 100), bench.Size(50, 10), bench.Size(20, 4)
	env := testenv.Start(t, testenv.Options{})
	cl := newPropCluster(t, adminClient(t, env), pods, nodes)
	w := watchNodePolicies(t, env, cl)
	startController(t, env)
	began := time.Now()
	w.settle(t, "the first pass", propState{port: 80})
	t.Logf("every NodePolicy written %s after the controller started", time.Since(began).Round(time.Millisecond))

	runPropagation(t, env, cl, w, fmt.Sprintf("policy_propagation_%d_pods_", pods), changes)
	cl.setFloor(t, &v1alpha1.PolicyFloor{Ingress: &v1alpha1.PolicyScope{SameLabel: ppTenant}})
	w.settle(t, "the floor", propState{port: cl.port, joined: cl.joined, floor: true})
	runPropagation(t, env, cl, w, fmt.Sprintf("policy_propagation_floor_%d_pods_", pods), changes/2)
}

// runPropagation makes k changes, one at a time, and prints their
// figures under prefix.
func runPropagation(t *testing.T, env *testenv.Env, cl *propCluster, w *propWatch, prefix string, k int) {
	api, cpuBefore := env.Metrics(t), processCPU(t)
	passesBefore, passTimeBefore := nodePolicyPasses(t)
	var took []time.Duration
	for i := range k {
		state := propState{port: cl.port, joined: cl.joined, floor: w.state().floor}
		what := "ns-0's policy"
		if i%2 == 0 {
			state.port = 80 + 8080 - state.port
		} else {
			state.joined = !state.joined
			what = "ns-1's tenant"
		}
		w.expect(state)
		if i%2 == 0 {
			cl.setPort(t, state.port)
		} else {
			cl.setJoined(t, state.joined)
		}
		written := time.Now()
		took = append(took, max(w.wait(t, what).Sub(written), 0))
		w.quiet()
	}
	passes, passTime := nodePolicyPasses(t)
	apiAfter := env.Metrics(t)
	per := func(v float64) float64 { return v / float64(k) }
	fmt.Printf("BENCH %sp50 %d ms\n", prefix, bench.Percentile(took, 0.5).Milliseconds())
	fmt.Printf("BENCH %sp99 %d ms\n", prefix, bench.Percentile(took, 0.99).Milliseconds())
	fmt.Printf("BENCH %snodepolicy_writes_per_change %.1f writes\n", prefix, per(nodePolicyWrites(apiAfter)-nodePolicyWrites(api)))
	fmt.Printf("BENCH %spasses_per_change %.1f passes\n", prefix, per(passes-passesBefore))
	fmt.Printf("BENCH %spass_time_per_change %.1f ms\n", prefix, per(passTime-passTimeBefore)*1000)
	fmt.Printf("BENCH %sprocess_cpu_per_change %.1f ms\n", prefix, per(float64((processCPU(t)-cpuBefore).Microseconds())/1000))
	fmt.Printf("BENCH %sapiserver_cpu_per_change %.1f ms\n", prefix, per(apiCPU(t, apiAfter)-apiCPU(t, api))*1000)
}

// propCluster is the bench's objects and what it last wrote of them.
type propCluster struct {
	c client.Client
	// policy is ns-0's, as last written.
	policy *mnp.MultiNetworkPolicy
	// port is the one ns-0's policy opens to its tenant; joined says
	// whether ns-1 is in ns-0's tenant, t0.
	port   int32
	joined bool
	// watched are the UIDs of ns-0's pods, by node; isolated and
	// floored count, by node, the pods a NodePolicy lists without and
	// with the floor.
	watched           map[string][]string
	isolated, floored map[string]int
	// inTenant and joiner are the addresses of a pod of ns-2 (always in
	// t0) and of one of ns-1.
	inTenant, joiner netip.Addr
}

func tenantOf(k int) string { return fmt.Sprintf("t%d", k%2) }

// newPropCluster creates the namespaces, the profile, the policies and
// the pods, 32 at a time.
func newPropCluster(t *testing.T, c client.Client, pods, nodes int) *propCluster {
	ctx := context.Background()
	cl := &propCluster{c: c, port: 80, watched: map[string][]string{}, isolated: map[string]int{}, floored: map[string]int{}}
	for k := range ppNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%d", k), Labels: map[string]string{ppTenant: tenantOf(k)}}}
		if err := c.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
		if k == ppNamespaces-1 {
			continue
		}
		p := tenantPolicy(ns.Name, tenantOf(k), cl.port)
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			cl.policy = p
		}
	}
	prof := &v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: ppProfile}, Spec: v1alpha1.NetworkProfileSpec{
		Networks: []v1alpha1.Network{{Name: ppNetwork, Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-" + ppNetwork}}}}}
	if err := c.Create(ctx, prof); err != nil {
		t.Fatal(err)
	}
	uids := make([]types.UID, pods)
	parallelIndex(t, 0, pods, func(i int) error {
		p, err := propPod(i, nodes)
		if err == nil {
			err = c.Create(ctx, p)
		}
		uids[i] = p.UID
		return err
	})
	for i, uid := range uids {
		ns, node := i%ppNamespaces, propNode(i, nodes)
		cl.floored[node]++
		if ns != ppNamespaces-1 {
			cl.isolated[node]++
		}
		if ns == 0 {
			cl.watched[node] = append(cl.watched[node], string(uid))
		}
	}
	cl.inTenant, cl.joiner = propAddr(2), propAddr(1)
	return cl
}

func propNode(i, nodes int) string { return fmt.Sprintf("node-%02d", (i/ppNamespaces)%nodes) }

// propAddr is pod i's address: consecutive pods are of different
// namespaces, so that no namespace's addresses merge into a prefix.
func propAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, 64, byte((i + 1) >> 8), byte(i + 1)})
}

// propPod is pod i with the approval of net1 on the network and the
// network-status its agent would write.
func propPod(i, nodes int) (*corev1.Pod, error) {
	ns := fmt.Sprintf("ns-%d", i%ppNamespaces)
	approval, err := json.Marshal(v1alpha1.Approval{Interfaces: []v1alpha1.ApprovedInterface{{
		Interface: ppInterface, Network: ppNetwork, Profile: ppProfile, Kind: v1alpha1.KindBridge, Bridge: "pnbr-" + ppNetwork}}})
	if err != nil {
		return nil, err
	}
	status, err := json.Marshal([]v1alpha1.NetworkStatus{{Name: ns + "/" + ppNetwork, Interface: ppInterface, IPs: []string{propAddr(i).String()}}})
	if err != nil {
		return nil, err
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p-%04d", i),
			Labels:      map[string]string{"app": fmt.Sprintf("a%d", (i/ppNamespaces)%10)},
			Annotations: map[string]string{v1alpha1.ApprovedAnnotation: string(approval), v1alpha1.NetworkStatusAnnotation: string(status)}},
		Spec: corev1.PodSpec{NodeName: propNode(i, nodes), Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}, nil
}

// tenantPolicy lets into every pod of ns, on the network, TCP port from
// the pods of tenant's namespaces, and TCP 9090 from ns's app=a0 pods.
func tenantPolicy(ns, tenant string, port int32) *mnp.MultiNetworkPolicy {
	tcp := corev1.ProtocolTCP
	return &mnp.MultiNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ppPolicy, Annotations: map[string]string{netpolicy.PolicyForAnnotation: ppNetwork}},
		Spec: mnp.MultiNetworkPolicySpec{PolicyTypes: []mnp.MultiPolicyType{mnp.PolicyTypeIngress}, Ingress: []mnp.MultiNetworkPolicyIngressRule{{
			From:  []mnp.MultiNetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{ppTenant: tenant}}}},
			Ports: []mnp.MultiNetworkPolicyPort{{Protocol: &tcp, Port: new(intstr.FromInt32(port))}},
		}, {
			From:  []mnp.MultiNetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a0"}}}},
			Ports: []mnp.MultiNetworkPolicyPort{{Protocol: &tcp, Port: new(intstr.FromInt32(9090))}},
		}}},
	}
}

// setPort writes ns-0's policy with its tenant's port.
func (cl *propCluster) setPort(t *testing.T, port int32) {
	cl.policy.Spec.Ingress[0].Ports[0].Port = new(intstr.FromInt32(port))
	if err := cl.c.Update(context.Background(), cl.policy); err != nil {
		t.Fatal(err)
	}
	cl.port = port
}

// setJoined moves ns-1 into ns-0's tenant, or back to its own.
func (cl *propCluster) setJoined(t *testing.T, joined bool) {
	tenant := tenantOf(1)
	if joined {
		tenant = tenantOf(0)
	}
	cl.patch(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns-1"}}, map[string]any{"metadata": map[string]any{"labels": map[string]string{ppTenant: tenant}}})
	cl.joined = joined
}

// setFloor sets the network's policy floor.
func (cl *propCluster) setFloor(t *testing.T, floor *v1alpha1.PolicyFloor) {
	prof := &v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: ppProfile}}
	if err := cl.c.Get(context.Background(), client.ObjectKeyFromObject(prof), prof); err != nil {
		t.Fatal(err)
	}
	prof.Spec.Networks[0].PolicyFloor = floor
	if err := cl.c.Update(context.Background(), prof); err != nil {
		t.Fatal(err)
	}
}

func (cl *propCluster) patch(t *testing.T, obj client.Object, patch any) {
	data, err := json.Marshal(patch)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.c.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, data)); err != nil {
		t.Fatal(err)
	}
}

// propState is what the NodePolicies must show: ns-0's pods take port
// from ns-2 (and no other port from it), and from ns-1 only when joined;
// with floor, ns-9's pods are listed too.
type propState struct {
	port   int32
	joined bool
	floor  bool
}

// propWatch follows every NodePolicy with a watch of the bench's own and
// notes when each node first shows the expected state.
type propWatch struct {
	cl *propCluster
	mu sync.Mutex
	// specs are the last spec of each node's object; reached, the nodes
	// that showed want since it was set, and when.
	specs     map[string]v1alpha1.NodePolicySpec
	want      propState
	reached   map[string]time.Time
	lastEvent time.Time
}

// watchNodePolicies starts the watch; it stops when the test ends.
func watchNodePolicies(t *testing.T, env *testenv.Env, cl *propCluster) *propWatch {
	w := &propWatch{cl: cl, specs: map[string]v1alpha1.NodePolicySpec{}, reached: map[string]time.Time{}}
	seen := func(obj any) {
		if np, ok := obj.(*v1alpha1.NodePolicy); ok {
			w.seen(np.Name, np.Spec)
		}
	}
	watchOwn(t, env, &v1alpha1.NodePolicy{}, toolscache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) }})
	return w
}

func (w *propWatch) seen(node string, spec v1alpha1.NodePolicySpec) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.specs[node], w.lastEvent = spec, now
	if _, ok := w.reached[node]; !ok && w.shows(node, spec, w.want) {
		w.reached[node] = now
	}
}

func (w *propWatch) state() propState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.want
}

// expect sets the state to wait for; the nodes that already show it
// count as reached now.
func (w *propWatch) expect(s propState) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.want, w.reached = s, map[string]time.Time{}
	for node, spec := range w.specs {
		if w.shows(node, spec, s) {
			w.reached[node] = now
		}
	}
}

// wait waits until every node showed the expected state and returns
// when the last did.
func (w *propWatch) wait(t *testing.T, what string) time.Time {
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
		w.mu.Lock()
		n, last := len(w.reached), time.Time{}
		for _, at := range w.reached {
			if at.After(last) {
				last = at
			}
		}
		w.mu.Unlock()
		if n == len(w.cl.floored) {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d NodePolicies show it after 2m", what, n, len(w.cl.floored))
		}
	}
}

// quiet waits until no NodePolicy changed for half a second (three
// batches): the passes a change set off, and those their own writes set
// off, are over.
func (w *propWatch) quiet() {
	for {
		w.mu.Lock()
		since := time.Since(w.lastEvent)
		w.mu.Unlock()
		if since >= 500*time.Millisecond {
			return
		}
		time.Sleep(500*time.Millisecond - since)
	}
}

// settle waits for a state the bench did not time, and for quiet.
func (w *propWatch) settle(t *testing.T, what string, s propState) {
	w.expect(s)
	w.wait(t, what)
	w.quiet()
}

// shows says whether a node's spec shows s: it lists the node's
// isolated interfaces, and each of ns-0's admits exactly what s says;
// w.mu is held.
func (w *propWatch) shows(node string, spec v1alpha1.NodePolicySpec, s propState) bool {
	read, err := netpolicy.ReadNodeSpec(spec)
	want := w.cl.isolated[node]
	if s.floor {
		want = w.cl.floored[node]
	}
	if err != nil || len(read) != want {
		return false
	}
	other := uint16(80 + 8080 - s.port)
	for _, uid := range w.cl.watched[node] {
		p, ok := read[netpolicy.InterfaceKey{PodUID: uid, Interface: ppInterface}]
		in := p.In
		if !ok || !tcpAdmits(in, w.cl.inTenant, uint16(s.port)) || tcpAdmits(in, w.cl.inTenant, other) ||
			tcpAdmits(in, w.cl.joiner, uint16(s.port)) != s.joined {
			return false
		}
	}
	return true
}

// tcpAdmits says whether a direction lets TCP from or to peer on port
// through.
func tcpAdmits(d netpolicy.PolicyDirection, peer netip.Addr, port uint16) bool {
	return !d.Isolated || slices.ContainsFunc(d.Allow, func(a netpolicy.Allow) bool {
		return a.Peer.Contains(peer) && (a.AnyProtocol || a.Protocol == 6) && port >= a.PortLo && port <= a.PortHi
	})
}

// nodePolicyWrites is every write of a NodePolicy the API server served.
func nodePolicyWrites(m string) float64 {
	n := 0.0
	for _, verb := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		n += bench.Sum(m, "apiserver_request_total", `verb="`+verb+`"`, `resource="nodepolicies"`)
	}
	return n
}

// nodePolicyPasses are the NodePolicy controller's passes so far and
// their time in seconds, from controller-runtime's metrics in this
// process.
func nodePolicyPasses(t *testing.T) (n, seconds float64) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_time_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			if slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == "controller" && l.GetValue() == "nodepolicies" }) {
				n += float64(m.GetHistogram().GetSampleCount())
				seconds += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return n, seconds
}

// apiCPU is the API server's CPU time so far, in seconds.
func apiCPU(t *testing.T, metrics string) float64 {
	return bench.MustGauge(t, metrics, "process_cpu_seconds_total")
}

// processCPU is this process's CPU time so far, user and system.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
