package agent_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"podnet.io/podnet/agent"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/simnode"
	"podnet.io/podnet/test/testenv"
)

func init() { ctrllog.SetLogger(logr.Discard()) }

// claimOf is a claim of another agent's making, on node.
func claimOf(node string, i int) *v1alpha1.IPClaim {
	addr := fmt.Sprintf("10.%d.%d.%d", 100+i/65536, i/256%256, i%256)
	return &v1alpha1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: strings.ReplaceAll(addr, ".", "-"),
			Labels: map[string]string{v1alpha1.NodeLabel: node, v1alpha1.NetworkLabel: "data", v1alpha1.PodUIDLabel: fmt.Sprintf("uid-%d", i),
				v1alpha1.NamespaceLabel: "default"},
		},
		Spec: v1alpha1.IPClaimSpec{Network: "data", Address: addr, Pool: "10.0.0.0/8", Interface: "net1",
			Pod: v1alpha1.PodReference{Namespace: "default", Name: fmt.Sprintf("p%d", i), UID: fmt.Sprintf("uid-%d", i)}},
	}
}

// createClaims creates claims from..to-1 on node, eight at a time.
func createClaims(t *testing.T, c client.Client, node string, from, to int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := from + w; i < to; i += 8 {
				if err := c.Create(context.Background(), claimOf(node, i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func startNode(t *testing.T, env *testenv.Env, name string, o simnode.Options) (*simnode.Node, *simnode.Approver) {
	t.Helper()
	if err := simnode.Grant(context.Background(), env.Client, "default", "demo", "data", "192.168.100.0/24"); err != nil {
		t.Fatal(err)
	}
	ap, err := simnode.NewApprover()
	if err != nil {
		t.Fatal(err)
	}
	n, err := simnode.Start(env.Config, env.Scheme, name, ap.Verifier, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Stop(); err != nil {
			t.Errorf("stop agent of %s: %v", name, err)
		}
	})
	return n, ap
}

// TestIntegrationAgentCacheHoldsOnlyItsNode: an agent's cache holds the
// IPClaims and the NodePolicy of its own node and none of another's, and a
// read of a type it has no informer for fails instead of starting a
// cluster-wide informer.
func TestIntegrationAgentCacheHoldsOnlyItsNode(t *testing.T) {
	var claimSel string
	for obj, by := range agent.CacheOptions("node-a").ByObject {
		if _, ok := obj.(*v1alpha1.IPClaim); ok && by.Label != nil {
			claimSel = by.Label.String()
		}
	}
	if want := v1alpha1.NodeLabel + "=node-a"; claimSel != want {
		t.Fatalf("IPClaim label selector %q, want %q", claimSel, want)
	}

	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	createClaims(t, env.Client, "node-a", 0, 3)
	createClaims(t, env.Client, "node-b", 3, 8)
	for _, node := range []string{"node-a", "node-b"} {
		if err := env.Client.Create(ctx, &v1alpha1.NodePolicy{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
			t.Fatal(err)
		}
	}
	n, _ := startNode(t, env, "node-a", simnode.Options{})
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := n.WaitReady(waitCtx, time.Now()); err != nil {
		t.Fatal(err)
	}
	var list v1alpha1.IPClaimList
	if err := n.Manager.GetCache().List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 3 {
		t.Fatalf("the agent of node-a caches %d claims, want its own 3", len(list.Items))
	}
	for _, c := range list.Items {
		if c.Labels[v1alpha1.NodeLabel] != "node-a" {
			t.Fatalf("the agent of node-a caches claim %s of node %q", c.Name, c.Labels[v1alpha1.NodeLabel])
		}
	}
	var policies v1alpha1.NodePolicyList
	if err := n.Manager.GetCache().List(ctx, &policies); err != nil {
		t.Fatal(err)
	}
	if len(policies.Items) != 1 || policies.Items[0].Name != "node-a" {
		t.Fatalf("the agent of node-a caches %d NodePolicies (%v), want its own only", len(policies.Items), policies.Items)
	}
	var cms corev1.ConfigMapList
	err := n.Manager.GetClient().List(ctx, &cms)
	if err == nil || !strings.Contains(err.Error(), "ConfigMap") {
		t.Fatalf("a read of ConfigMaps through the agent's cache: err = %v, want a refusal naming ConfigMap", err)
	}
}

// TestIntegrationAgentPodStartAndSteadyStateCost: starting a pod with one
// network costs its agent at most 3 writes (the claim, one status patch
// carrying annotation and condition, the Event) and no read, the kubelet's
// later report of the pod's IPs included: the one status patch already
// carries eth0's address from the runtime. Once it is attached, two resync
// periods cost the API server nothing at all.
func TestIntegrationAgentPodStartAndSteadyStateCost(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	const resync = time.Second
	n, ap := startNode(t, env, "node-a", simnode.Options{Resync: resync})
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := n.WaitReady(waitCtx, time.Now()); err != nil {
		t.Fatal(err)
	}
	before := n.Counter.Snapshot()

	pod := simnode.NewPod("default", "p1", "node-a")
	if err := ap.Approve(pod, "demo", "data", "192.168.100.0/24"); err != nil {
		t.Fatal(err)
	}
	kubelet := simnode.Kubelet{Client: env.Client}
	if err := kubelet.Run(ctx, pod); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "pod attached, status and Event written", func(ctx context.Context) error {
		var p corev1.Pod
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
			return err
		}
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == v1alpha1.NetworksReadyCondition && c.Status == corev1.ConditionTrue)
		}
		if !ready || p.Annotations[v1alpha1.NetworkStatusAnnotation] == "" {
			return fmt.Errorf("not attached yet: %v", p.Status.Conditions)
		}
		var evs eventsv1.EventList
		if err := env.Client.List(ctx, &evs, client.InNamespace("default")); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Regarding.UID == p.UID && e.Reason == v1alpha1.ReasonAttached {
				return nil
			}
		}
		return fmt.Errorf("no %s Event yet", v1alpha1.ReasonAttached)
	})
	// The kubelet reports the pod's IPs after the attach. Wait until the
	// agent has reconciled the pod as reported: its cache holds the IPs,
	// then two Applies (one reconcile of a pod at a time, so the second
	// began after the cache had them).
	if err := kubelet.ReportIPs(ctx, pod); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the agent's cache holds the reported IPs", func(ctx context.Context) error {
		var p corev1.Pod
		if err := n.Manager.GetCache().Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
			return err
		}
		if len(p.Status.PodIPs) == 0 {
			return fmt.Errorf("no podIPs in the agent's cache yet")
		}
		return nil
	})
	reported := n.Dataplane.Applies()
	testenv.Eventually(t, time.Minute, "two reconciles after the IPs were reported", func(context.Context) error {
		if got := n.Dataplane.Applies() - reported; got < 2 {
			return fmt.Errorf("%d reconciles so far", got)
		}
		return nil
	})
	start := n.Counter.Snapshot().Sub(before)
	t.Logf("pod start: %d writes, %d gets, %d lists, %d watches", start.Writes, start.Gets, start.Lists, start.Watches)
	if start.Writes > 3 || start.Reads() != 0 || start.Watches != 0 {
		r := n.Counter.Recent()
		t.Fatalf("a pod start cost the agent %+v, want at most 3 writes and no read; last requests: %v", start, r[max(0, len(r)-12):])
	}
	var p corev1.Pod
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
		t.Fatal(err)
	}
	eth0 := fmt.Sprintf(`{"name":%q,"interface":"eth0","ips":[%q],"default":true`, v1alpha1.DefaultClusterNetworkName, simnode.PodIP(string(pod.UID)))
	if st := p.Annotations[v1alpha1.NetworkStatusAnnotation]; !strings.HasPrefix(st, "["+eth0) {
		t.Fatalf("network-status = %s, want it to start with %s}", st, eth0)
	}

	// Steady state: the pod is reconciled again every resync, from the
	// cache and the node only.
	steady := n.Counter.Snapshot()
	applies := n.Dataplane.Applies()
	testenv.Eventually(t, time.Minute, "two resyncs", func(context.Context) error {
		if got := n.Dataplane.Applies() - applies; got < 2 {
			return fmt.Errorf("%d resyncs so far", got)
		}
		return nil
	})
	if d := n.Counter.Snapshot().Sub(steady); d.Total() != 0 {
		t.Fatalf("an attached, unchanged pod cost %+v across two resyncs, want nothing; last requests: %v", d, n.Counter.Recent())
	}
}

// TestIntegrationAgentReadinessIgnoresOtherNodes: a fresh agent becomes
// ready with the same requests, and caches the same claims (none), whether
// the cluster holds no claims of other nodes or 2,000.
func TestIntegrationAgentReadinessIgnoresOtherNodes(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	measure := func() (simnode.Counts, int, time.Duration) {
		start := time.Now()
		n, err := simnode.Start(env.Config, env.Scheme, "node-a", nil, simnode.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := n.Stop(); err != nil {
				t.Error(err)
			}
		}()
		took, err := n.WaitReady(ctx, start)
		if err != nil {
			t.Fatal(err)
		}
		var list v1alpha1.IPClaimList
		if err := n.Manager.GetCache().List(ctx, &list); err != nil {
			t.Fatal(err)
		}
		return n.Counter.Snapshot(), len(list.Items), took
	}
	measure() // a first agent meets a just-started API server's hiccups
	emptyReqs, emptyCached, emptyTook := measure()
	createClaims(t, env.Client, "node-b", 0, 2000)
	fullReqs, fullCached, fullTook := measure()
	t.Logf("ready after %s with no other claims (%+v), %s with 2000 (%+v)", emptyTook, emptyReqs, fullTook, fullReqs)
	if emptyCached != 0 || fullCached != 0 {
		t.Fatalf("the agent of node-a cached %d, then %d claims of node-b", emptyCached, fullCached)
	}
	// Informers may list then watch, or stream their list in a watch
	// (client-go's WatchList), and may retry once, so count those
	// together: at most three per informer (pods, IP and MAC claims,
	// namespace metadata, profiles, the node's NodePolicy), plus the
	// allocator's one list of claims of the former name scheme (none
	// here), and no per-object read at all.
	const informers = 6
	for _, r := range []simnode.Counts{emptyReqs, fullReqs} {
		if r.Gets != 0 || r.Writes != 0 || r.Lists+r.Watches > 3*informers+1 {
			t.Fatalf("readiness cost %+v with no other claims and %+v with 2000 of another node, want no get, no write and at most %d lists and watches", emptyReqs, fullReqs, 3*informers+1)
		}
	}
}
