package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/controller/netpolicies"
	"podnet.io/podnet/pkg/netpolicy"
	"podnet.io/podnet/pkg/portsecurity"
	"podnet.io/podnet/test/bench"
	"podnet.io/podnet/test/testenv"
)

// policyPod is a pod on the networks nets (interface net<i+1> each, the
// address addrs[i] reported on it), granted by profile, on node.
type policyPod struct {
	ns, name, node, profile string
	labels                  map[string]string
	nets, addrs             []string
}

// create creates the pod with its approval and the network-status its
// agent would write, and returns its UID.
func (p policyPod) create(t *testing.T, c client.Client) string {
	t.Helper()
	type approved struct {
		Interface string `json:"interface"`
		Network   string `json:"network"`
		Profile   string `json:"profile"`
		Kind      string `json:"kind"`
	}
	var approval struct {
		Interfaces []approved `json:"interfaces"`
	}
	var status []v1alpha1.NetworkStatus
	for i, n := range p.nets {
		ifc := fmt.Sprintf("net%d", i+1)
		approval.Interfaces = append(approval.Interfaces, approved{Interface: ifc, Network: n, Profile: p.profile, Kind: "bridge"})
		status = append(status, v1alpha1.NetworkStatus{Name: p.ns + "/" + n, Interface: ifc, IPs: []string{p.addrs[i]}})
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.name, Labels: p.labels,
		Annotations: map[string]string{v1alpha1.ApprovedAnnotation: mustJSON(t, approval), v1alpha1.NetworkStatusAnnotation: mustJSON(t, status)}},
		Spec: corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if err := c.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	return string(pod.UID)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// probe is a peer and TCP port an interface's policy is asked about.
type probe struct {
	addr string
	port uint16
}

// admits lists the probes a direction lets through: "-" when it is not
// isolated, "none" when it allows nothing.
func admits(d portsecurity.PolicyDirection, probes []probe) string {
	if !d.Isolated {
		return "-"
	}
	var out []string
	for _, p := range probes {
		a := netip.MustParseAddr(p.addr)
		if slices.ContainsFunc(d.Allow, func(al portsecurity.Allow) bool {
			return al.Peer.Contains(a) && (al.AnyProtocol || al.Protocol == 6) && p.port >= al.PortLo && p.port <= al.PortHi
		}) {
			out = append(out, fmt.Sprintf("%s:%d", p.addr, p.port))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}

// nodePolicies reads the NodePolicies of nodes back (netpolicy.ReadNodeSpec)
// as, per node, "<pod>/<interface>" → "in <admitted> out <admitted>" over
// the probes of the interface's network; a node without an object is
// absent.
func nodePolicies(ctx context.Context, c client.Client, nodes []string, names map[string]string, probes map[string][]probe) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, node := range nodes {
		var np v1alpha1.NodePolicy
		err := c.Get(ctx, client.ObjectKey{Name: node}, &np)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		read, err := netpolicy.ReadNodeSpec(np.Spec)
		if err != nil {
			return nil, fmt.Errorf("NodePolicy %s: %w", node, err)
		}
		out[node] = map[string]string{}
		for k, p := range read {
			name := names[k.PodUID] + "/" + k.Interface
			out[node][name] = "in " + admits(p.In, probes[k.Interface]) + " out " + admits(p.Out, probes[k.Interface])
		}
	}
	return out, nil
}

// TestIntegrationNodePoliciesFollowPoliciesFloorsAndLabels: the
// controller writes each node's NodePolicy from a profile's floor on one
// network and a MultiNetworkPolicy on another: the isolated interfaces,
// with sets that let exactly the expected peers and ports through; the
// objects follow a namespace's labels, a pod's labels, the policy's spec
// and policy-for, and the floor's removal (then they are deleted). A
// policy's named port and a refused policy-for get Warning Events.
func TestIntegrationNodePoliciesFollowPoliciesFloorsAndLabels(t *testing.T) {
	env := sharedEnv(t)
	c := env.Client
	ctx := context.Background()
	nsA := testNamespace(t, c, "npol-a", map[string]string{"tenant": "t1"})
	nsB := testNamespace(t, c, "npol-b", map[string]string{"tenant": "t1"})
	// Names of their own: pods of earlier runs stay on the shared server.
	floorNet, policyNet, n1, n2 := nsA+"-floor", nsA+"-mnp", nsA+"-n1", nsA+"-n2"
	prof := &v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: nsA}, Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{
		{Name: floorNet, Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-floor"}, PolicyFloor: &v1alpha1.PolicyFloor{
			Ingress: &v1alpha1.PolicyScope{SameNamespace: true}, Egress: &v1alpha1.PolicyScope{SameLabel: "tenant"}}},
		{Name: policyNet, Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-mnp"}},
	}}}
	if err := c.Create(ctx, prof); err != nil {
		t.Fatal(err)
	}
	tcp := corev1.ProtocolTCP
	db := &mnp.MultiNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: "db", Annotations: map[string]string{netpolicy.PolicyForAnnotation: policyNet}},
		Spec: mnp.MultiNetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Ingress: []mnp.MultiNetworkPolicyIngressRule{{
				From:  []mnp.MultiNetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
				Ports: []mnp.MultiNetworkPolicyPort{{Protocol: &tcp, Port: new(intstr.FromInt32(5432))}},
			}}}}
	if err := c.Create(ctx, db); err != nil {
		t.Fatal(err)
	}
	startController(t, env, time.Minute)

	pods := []policyPod{
		{ns: nsA, name: "a1", node: n1, labels: map[string]string{"app": "web"}, addrs: []string{"10.70.0.1", "10.71.0.1"}},
		{ns: nsA, name: "a2", node: n2, labels: map[string]string{"app": "db"}, addrs: []string{"10.70.0.2", "10.71.0.2"}},
		{ns: nsB, name: "b1", node: n1, labels: map[string]string{"app": "web"}, addrs: []string{"10.70.0.3", "10.71.0.3"}},
	}
	names := map[string]string{}
	for _, p := range pods {
		p.profile, p.nets = prof.Name, []string{floorNet, policyNet}
		names[p.create(t, c)] = p.name
	}
	probes := map[string][]probe{
		"net1": {{"10.70.0.1", 80}, {"10.70.0.2", 80}, {"10.70.0.3", 80}},
		"net2": {{"10.71.0.1", 5432}, {"10.71.0.1", 80}, {"10.71.0.2", 5432}, {"10.71.0.3", 5432}},
	}
	expect := func(what string, want map[string]map[string]string) {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, what, func(ctx context.Context) error {
			got, err := nodePolicies(ctx, c, []string{n1, n2}, names, probes)
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(got, want) {
				return fmt.Errorf("NodePolicies\n got %v\nwant %v", got, want)
			}
			return nil
		})
	}
	const (
		sameNS   = "in 10.70.0.1:80 10.70.0.2:80 out "
		tenantT1 = "10.70.0.1:80 10.70.0.2:80 10.70.0.3:80"
	)
	expect("floors and the policy", map[string]map[string]string{
		n1: {"a1/net1": sameNS + tenantT1, "b1/net1": "in 10.70.0.3:80 out " + tenantT1},
		n2: {"a2/net1": sameNS + tenantT1, "a2/net2": "in 10.71.0.1:5432 out -"},
	})

	// nsB leaves tenant t1: egress of either namespace's pods no longer
	// reaches the other's.
	setLabels(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsB}}, map[string]string{"tenant": "t2"})
	expect("a namespace's labels", map[string]map[string]string{
		n1: {"a1/net1": sameNS + "10.70.0.1:80 10.70.0.2:80", "b1/net1": "in 10.70.0.3:80 out 10.70.0.3:80"},
		n2: {"a2/net1": sameNS + "10.70.0.1:80 10.70.0.2:80", "a2/net2": "in 10.71.0.1:5432 out -"},
	})

	// a1 is no longer app=web: a2 is isolated, allowing no one.
	setLabels(t, c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: "a1"}}, map[string]string{"app": "other"})
	afterPodLabel := map[string]map[string]string{
		n1: {"a1/net1": sameNS + "10.70.0.1:80 10.70.0.2:80", "b1/net1": "in 10.70.0.3:80 out 10.70.0.3:80"},
		n2: {"a2/net1": sameNS + "10.70.0.1:80 10.70.0.2:80", "a2/net2": "in none out -"},
	}
	expect("a pod's labels", afterPodLabel)

	// The policy selects every pod of nsA and lets them all in on 5432.
	update(t, c, db, func(p *mnp.MultiNetworkPolicy) {
		p.Spec.PodSelector = metav1.LabelSelector{}
		p.Spec.Ingress[0].From = []mnp.MultiNetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}
	})
	bothIn := "in 10.71.0.1:5432 10.71.0.2:5432 out -"
	expect("the policy's spec", map[string]map[string]string{
		n1: {"a1/net1": sameNS + "10.70.0.1:80 10.70.0.2:80", "b1/net1": "in 10.70.0.3:80 out 10.70.0.3:80", "a1/net2": bothIn},
		n2: {"a2/net1": sameNS + "10.70.0.1:80 10.70.0.2:80", "a2/net2": bothIn},
	})
	// The policy is for another network: its interfaces are no longer
	// isolated.
	update(t, c, db, func(p *mnp.MultiNetworkPolicy) { p.Annotations[netpolicy.PolicyForAnnotation] = "elsewhere" })
	expect("the policy's policy-for", map[string]map[string]string{
		n1: {"a1/net1": sameNS + "10.70.0.1:80 10.70.0.2:80", "b1/net1": "in 10.70.0.3:80 out 10.70.0.3:80"},
		n2: {"a2/net1": sameNS + "10.70.0.1:80 10.70.0.2:80"},
	})

	// A named port, and a policy-for naming another namespace's network.
	named := &mnp.MultiNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: "named", Annotations: map[string]string{netpolicy.PolicyForAnnotation: policyNet}},
		Spec: mnp.MultiNetworkPolicySpec{Ingress: []mnp.MultiNetworkPolicyIngressRule{{Ports: []mnp.MultiNetworkPolicyPort{{Port: new(intstr.FromString("http"))}}}}}}
	foreign := &mnp.MultiNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: "foreign", Annotations: map[string]string{netpolicy.PolicyForAnnotation: nsB + "/" + policyNet}}}
	for _, p := range []*mnp.MultiNetworkPolicy{named, foreign} {
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	waitPolicyEvent(t, c, named, netpolicies.ReasonPolicyNotHonoured, "spec.ingress[0].ports[0].port")
	waitPolicyEvent(t, c, foreign, netpolicies.ReasonPolicyForRefused, netpolicy.PolicyForAnnotation)

	// Without its floor, the network isolates nothing: a2's net2 alone
	// (named selects all of nsA, its one port refused) is left, and n1's
	// object, left without interfaces, is deleted.
	update(t, c, prof, func(p *v1alpha1.NetworkProfile) { p.Spec.Networks[0].PolicyFloor = nil })
	expect("the floor's removal", map[string]map[string]string{n2: {"a2/net2": "in none out -"}, n1: {"a1/net2": "in none out -"}})
	if err := c.Delete(ctx, named); err != nil {
		t.Fatal(err)
	}
	expect("nothing isolated", map[string]map[string]string{})
}

// setLabels replaces an object's labels.
func setLabels(t *testing.T, c client.Client, obj client.Object, labels map[string]string) {
	t.Helper()
	data := mustJSON(t, map[string]any{"metadata": map[string]any{"labels": labels}})
	if err := c.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(data))); err != nil {
		t.Fatal(err)
	}
}

// update reads obj, changes it and writes it.
func update[T client.Object](t *testing.T, c client.Client, obj T, change func(T)) {
	t.Helper()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	change(obj)
	if err := c.Update(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

// waitPolicyEvent waits for a Warning Event of reason on the policy whose
// note names want.
func waitPolicyEvent(t *testing.T, c client.Client, p *mnp.MultiNetworkPolicy, reason, want string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, reason+" Event on "+p.Name, func(ctx context.Context) error {
		var list eventsv1.EventList
		if err := c.List(ctx, &list, client.InNamespace(p.Namespace)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.UID == p.UID && e.Reason == reason && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, want) {
				return nil
			}
		}
		return fmt.Errorf("no %s Event naming %q among %d", reason, want, len(list.Items))
	})
}

// TestIntegrationNodePoliciesGatherBursts: a burst of pods on a floored
// network costs each node's NodePolicy a few writes, not one a pod (nor
// one more after the last); the objects end with every pod.
func TestIntegrationNodePoliciesGatherBursts(t *testing.T) {
	env := sharedEnv(t)
	c := env.Client
	ctx := context.Background()
	ns := testNamespace(t, c, "npol-burst", nil)
	network, nodes := ns+"-floor", []string{ns + "-n1", ns + "-n2"}
	prof := &v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{
		{Name: network, Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-burst"}, PolicyFloor: &v1alpha1.PolicyFloor{Ingress: &v1alpha1.PolicyScope{SameNamespace: true}}}}}}
	if err := c.Create(ctx, prof); err != nil {
		t.Fatal(err)
	}
	startController(t, env, time.Minute)
	// Every write of a NodePolicy, as the API server counts them.
	writes := func() float64 {
		m := env.Metrics(t)
		n := 0.0
		for _, verb := range []string{"POST", "PUT", "PATCH", "DELETE"} {
			n += bench.Sum(m, "apiserver_request_total", `verb="`+verb+`"`, `resource="nodepolicies"`)
		}
		return n
	}
	before := writes()
	// 100 pods over a second or two, as a ReplicaSet scaling up creates
	// them: far more than one batch.
	const pods = 100
	start := time.Now()
	for i := range pods {
		p := policyPod{ns: ns, name: fmt.Sprintf("p-%03d", i), node: nodes[i%2], profile: ns,
			nets: []string{network}, addrs: []string{fmt.Sprintf("10.72.0.%d", 1+i)}}
		p.create(t, c)
		time.Sleep(10 * time.Millisecond)
	}
	created := time.Since(start)
	testenv.Eventually(t, 30*time.Second, "every pod's interface on its node", func(ctx context.Context) error {
		for _, node := range nodes {
			var np v1alpha1.NodePolicy
			if err := c.Get(ctx, client.ObjectKey{Name: node}, &np); err != nil {
				return err
			}
			if len(np.Spec.Interfaces) != pods/2 || len(np.Spec.Sets) != 1 || len(np.Spec.Sets[0].Allow) == 0 {
				return fmt.Errorf("NodePolicy %s: %d interfaces, %d sets", node, len(np.Spec.Interfaces), len(np.Spec.Sets))
			}
		}
		return nil
	})
	// The pass after the last write (its own write's event) writes nothing.
	time.Sleep(time.Second)
	n := writes() - before
	t.Logf("%d pods created in %s: %v NodePolicy writes", pods, created.Round(time.Millisecond), n)
	// At most one write a node per batch (one pass each), and a few for
	// passes that began as the creates did.
	most := 2 * (float64(created/netpolicies.DefaultBatch) + 3)
	if n < 2 || n > most {
		t.Errorf("%v NodePolicy writes for %d pods on 2 nodes in %s, want 2 to %v", n, pods, created, most)
	}
}
