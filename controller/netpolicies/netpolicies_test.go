package netpolicies

import (
	"net/netip"
	"reflect"
	"slices"
	"testing"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/controller/infocache"
	"podnet.io/podnet/pkg/netpolicy"
)

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

func host(s string) netip.Prefix { return netip.PrefixFrom(addr(s), addr(s).BitLen()) }

// TestEvaluateNetworkPerFloor: pods that different profiles granted one
// network are each judged under their own profile's floor, and are each
// other's peers whatever profile granted them; a policy's problem is
// reported once, not once per floor.
func TestEvaluateNetworkPerFloor(t *testing.T) {
	sameNS := &netpolicy.Floor{Ingress: &netpolicy.Scope{SameNamespace: true}}
	alsoSameNS := &netpolicy.Floor{Ingress: &netpolicy.Scope{SameNamespace: true}}
	in := netpolicy.Input{
		Pods: []netpolicy.Pod{
			{Namespace: "t1", Name: "a", Addresses: []netip.Addr{addr("10.0.0.1")}},
			{Namespace: "t1", Name: "b", Addresses: []netip.Addr{addr("10.0.0.2")}},
			{Namespace: "t2", Name: "c", Addresses: []netip.Addr{addr("10.0.0.3")}},
			{Namespace: "t1", Name: "d"}, // no address yet: judged, no one's peer
		},
		Policies: []netpolicy.Policy{{Namespace: "t2", Name: "named", Spec: mnp.MultiNetworkPolicySpec{
			Ingress: []mnp.MultiNetworkPolicyIngressRule{{Ports: []mnp.MultiNetworkPolicyPort{{Port: namedPort("http")}}}}}}},
		Floor: &netpolicy.Floor{Egress: &netpolicy.Scope{}}, // ignored
	}
	verdicts, problems := netpolicy.EvaluateEach(in, []*netpolicy.Floor{sameNS, nil, alsoSameNS, sameNS})
	floor := []string{netpolicy.FloorName}
	t1 := netpolicy.Direction{Isolated: true, Rules: []netpolicy.Rule{{Peers: netpolicy.Prefixes{host("10.0.0.1"), host("10.0.0.2")}, Policy: netpolicy.FloorName}}, IsolatedBy: floor}
	want := map[string]netpolicy.Verdict{
		"t1/a": {Ingress: t1},
		"t1/b": {},
		// c is selected by the policy, whose one port is refused: its
		// ingress allows nothing, under any floor.
		"t2/c": {Ingress: netpolicy.Direction{Isolated: true, IsolatedBy: []string{"t2/named", netpolicy.FloorName}}},
		"t1/d": {Ingress: t1},
	}
	if !reflect.DeepEqual(verdicts, want) {
		t.Errorf("verdicts:\n got %+v\nwant %+v", verdicts, want)
	}
	if len(problems) != 1 || problems[0].Policy != "t2/named" || problems[0].Field != "spec.ingress[0].ports[0].port" {
		t.Errorf("problems %v, want the named port once", problems)
	}
	// No pods: the policies' problems all the same.
	if _, problems := netpolicy.EvaluateEach(netpolicy.Input{Policies: in.Policies}, nil); len(problems) != 1 {
		t.Errorf("problems without pods: %v", problems)
	}
}

// pod is a pod of namespace t1 on the networks of its attachments
// (interface net<i+1> each).
func pod(name, node, labels string, nets ...string) *infocache.PodInfo {
	p := &infocache.PodInfo{Namespace: "t1", Name: name, UID: types.UID("u-" + name), Node: node, Approval: infocache.Approved, Labels: labels}
	for i, n := range nets {
		p.Interfaces = append(p.Interfaces, infocache.Attachment{Interface: "net" + string(rune('1'+i)), Network: n, Profile: "grant"})
	}
	return p
}

func networksOfMarks(d dirty) []string {
	var out []string
	for n := range d.networks {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// TestIndexMarksWhatChanged: a pod's change marks its networks before
// and after, but only when something a verdict reads changed; a
// namespace marks the networks of its pods; the first pass is a full one.
func TestIndexMarksWhatChanged(t *testing.T) {
	x := newIndex()
	a := pod("a", "n1", "app=web", "data")
	if !x.podChanged(nil, a) {
		t.Fatal("a new pod on data marked nothing")
	}
	x.podChanged(nil, pod("plain", "n1", ""))
	if d := x.take(); !d.all || !reflect.DeepEqual(networksOfMarks(d), []string{"data"}) {
		t.Fatalf("first marks %+v, want a full pass naming data", d)
	}
	if d := x.take(); !d.empty() {
		t.Fatalf("marks after a take: %+v", d)
	}

	// A status update: a new record, the same inputs. Nothing is marked,
	// the index holds the new record.
	again := pod("a", "n1", "app=web", "data")
	if x.podChanged(a, again) || !x.take().empty() {
		t.Error("an update that changed no input marked a network")
	}
	if got := x.podsOf("data"); len(got) != 1 || got[0] != again {
		t.Errorf("pods of data %v, want the newer record", got)
	}

	changes := []struct {
		what string
		now  *infocache.PodInfo
		want []string
	}{
		{"labels", pod("a", "n1", "app=db", "data"), []string{"data"}},
		{"node", pod("a", "n2", "app=db", "data"), []string{"data"}},
		{"addresses", func() *infocache.PodInfo {
			p := pod("a", "n2", "app=db", "data")
			p.Interfaces[0].Addresses = []netip.Addr{addr("10.0.0.1")}
			return p
		}(), []string{"data"}},
		{"networks", pod("a", "n2", "app=db", "up", "l3"), []string{"data", "l3", "up"}},
	}
	was := again
	for _, c := range changes {
		if !x.podChanged(was, c.now) {
			t.Errorf("%s: nothing marked", c.what)
		}
		if got := networksOfMarks(x.take()); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: marked %v, want %v", c.what, got, c.want)
		}
		was = c.now
	}
	if got := x.podsOf("data"); len(got) != 0 {
		t.Errorf("data still holds %v", got)
	}

	// A namespace marks the networks of its pods only.
	x.podChanged(nil, &infocache.PodInfo{Namespace: "t2", Name: "b", Interfaces: []infocache.Attachment{{Interface: "net1", Network: "other"}}})
	x.take()
	if !x.markNamespace("t1") {
		t.Error("t1's pods marked nothing")
	}
	if got := networksOfMarks(x.take()); !reflect.DeepEqual(got, []string{"l3", "up"}) {
		t.Errorf("namespace t1 marked %v, want l3 and up", got)
	}
	if x.markNamespace("t3") {
		t.Error("a namespace without pods on networks marked some")
	}

	// The pod goes: its networks are marked, and the namespace has none.
	x.podChanged(was, nil)
	if got := networksOfMarks(x.take()); !reflect.DeepEqual(got, []string{"l3", "up"}) {
		t.Errorf("deletion marked %v", got)
	}
	if x.markNamespace("t1") {
		t.Error("t1 has no pods left but marked networks")
	}

	// A failed pass gives its marks back.
	x.markNode("n1")
	d := x.take()
	x.restore(d)
	if got := x.take(); !got.nodes["n1"] {
		t.Errorf("restored marks %+v", got)
	}
}

// TestVerdictsTouchChangedNodes: replacing a network's verdicts names the
// nodes where an isolated interface came, went, moved or changed, and a
// node's verdicts gather every network on it.
func TestVerdictsTouchChangedNodes(t *testing.T) {
	iso := func(peer string) netpolicy.Verdict {
		return netpolicy.Verdict{Ingress: netpolicy.Direction{Isolated: true, Rules: []netpolicy.Rule{{Peers: netpolicy.Prefixes{host(peer)}}}}}
	}
	k := func(uid, ifc string) netpolicy.InterfaceKey {
		return netpolicy.InterfaceKey{PodUID: uid, Interface: ifc}
	}
	s := newVerdicts()
	touched := s.replace("data", map[netpolicy.InterfaceKey]placed{k("a", "net1"): {"n1", iso("10.0.0.1")}, k("b", "net1"): {"n2", iso("10.0.0.1")}})
	if !reflect.DeepEqual(touched, map[string]bool{"n1": true, "n2": true}) {
		t.Errorf("first verdicts touched %v", touched)
	}
	s.replace("up", map[netpolicy.InterfaceKey]placed{k("a", "net2"): {"n1", iso("10.1.0.1")}})
	if got := s.ofNode("n1"); len(got) != 2 || !reflect.DeepEqual(got[k("a", "net2")], iso("10.1.0.1")) {
		t.Errorf("n1's verdicts %v, want both networks'", got)
	}
	same := map[netpolicy.InterfaceKey]placed{k("a", "net1"): {"n1", iso("10.0.0.1")}, k("b", "net1"): {"n2", iso("10.0.0.1")}}
	if touched := s.replace("data", same); len(touched) != 0 {
		t.Errorf("the same verdicts touched %v", touched)
	}
	changed := map[netpolicy.InterfaceKey]placed{k("a", "net1"): {"n1", iso("10.0.0.9")}, k("b", "net1"): {"n2", iso("10.0.0.1")}}
	if touched := s.replace("data", changed); !reflect.DeepEqual(touched, map[string]bool{"n1": true}) {
		t.Errorf("a changed verdict on n1 touched %v", touched)
	}
	moved := map[netpolicy.InterfaceKey]placed{k("a", "net1"): {"n1", iso("10.0.0.9")}, k("b", "net1"): {"n3", iso("10.0.0.1")}}
	if touched := s.replace("data", moved); !reflect.DeepEqual(touched, map[string]bool{"n2": true, "n3": true}) {
		t.Errorf("b moving from n2 to n3 touched %v", touched)
	}
	if touched := s.replace("data", nil); !reflect.DeepEqual(touched, map[string]bool{"n1": true, "n3": true}) {
		t.Errorf("data emptied touched %v", touched)
	}
	if got := s.nodes(); !reflect.DeepEqual(got, []string{"n1"}) || len(s.ofNode("n1")) != 1 || !reflect.DeepEqual(s.networks(), []string{"up"}) {
		t.Errorf("left: nodes %v, networks %v, n1 %v", got, s.networks(), s.ofNode("n1"))
	}
}

// TestPlacementsOfScheduledIsolatedPods: only interfaces on the network,
// of pods with a node, isolated in a direction, are placed.
func TestPlacementsOfScheduledIsolatedPods(t *testing.T) {
	iso := netpolicy.Verdict{Egress: netpolicy.Direction{Isolated: true}}
	pods := []*infocache.PodInfo{pod("a", "n1", "", "data", "up", "data"), pod("b", "", "", "data"), pod("c", "n2", "", "data")}
	got := placements("data", pods, map[string]netpolicy.Verdict{"t1/a": iso, "t1/b": iso, "t1/c": {}})
	want := map[netpolicy.InterfaceKey]placed{{PodUID: "u-a", Interface: "net1"}: {"n1", iso}, {PodUID: "u-a", Interface: "net3"}: {"n1", iso}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("placements %v, want %v", got, want)
	}
}

// TestToldOncePerGeneration: a message is sent once per generation of a
// policy; a gone policy is forgotten.
func TestToldOncePerGeneration(t *testing.T) {
	tl := told{}
	p := &mnp.MultiNetworkPolicy{ObjectMeta: metav1.ObjectMeta{UID: "u", Generation: 1}}
	if !tl.first(p, "m") || tl.first(p, "m") || !tl.first(p, "other") {
		t.Error("generation 1: want m and other once each")
	}
	p.Generation = 2
	if !tl.first(p, "m") {
		t.Error("generation 2 did not tell m again")
	}
	tl.keep(map[types.UID]bool{})
	if len(tl) != 0 {
		t.Errorf("a gone policy is remembered: %v", tl)
	}
}

func namedPort(name string) *intstr.IntOrString {
	p := intstr.FromString(name)
	return &p
}

// TestOwnWritesAreNoChange: the watch events of the controller's own
// writes (create or patch at the version it wrote, its delete) mark
// nothing; anyone else's change, delete or re-create marks the node.
func TestOwnWritesAreNoChange(t *testing.T) {
	r := &Reconciler{index: newIndex()}
	np := func(version string, generation int64) *v1alpha1.NodePolicy {
		return &v1alpha1.NodePolicy{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: version, Generation: generation}}
	}
	marked := func() bool { return r.index.take().nodes["n1"] }
	r.written.set("n1", "5")
	if r.nodePolicyChanged(np("4", 1), np("5", 2)) || marked() {
		t.Error("the event of the controller's own patch marked the node")
	}
	if !r.nodePolicyChanged(np("5", 2), np("6", 3)) || !marked() {
		t.Error("someone else's change did not mark the node")
	}
	if !r.nodePolicyChanged(np("6", 3), nil) || !marked() {
		t.Error("someone else's delete did not mark the node")
	}
	r.written.set("n1", deletedVersion)
	if r.nodePolicyChanged(np("6", 3), nil) || marked() {
		t.Error("the event of the controller's own delete marked the node")
	}
	if !r.nodePolicyChanged(nil, np("7", 1)) || !marked() {
		t.Error("someone else's create after the controller's delete did not mark the node")
	}
}
