package agent

import (
	"context"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/netpolicy"
	"podnet.io/podnet/pkg/portsecurity"
)

var (
	none     = portsecurity.PolicyDirection{}
	nothing  = portsecurity.PolicyDirection{Isolated: true}
	fromPeer = portsecurity.PolicyDirection{Isolated: true, Allow: []portsecurity.Allow{
		{Peer: netip.MustParsePrefix("10.0.0.1/32"), Protocol: 6, PortLo: 80, PortHi: 80},
	}}
	toPeer = portsecurity.PolicyDirection{Isolated: true, Allow: []portsecurity.Allow{
		{Peer: netip.MustParsePrefix("10.0.0.2/32"), AnyProtocol: true, PortHi: 65535},
	}}
	ingressFloor = &v1alpha1.PolicyFloor{Ingress: &v1alpha1.PolicyScope{SameNamespace: true}}
	egressFloor  = &v1alpha1.PolicyFloor{Egress: &v1alpha1.PolicyScope{}}
	bothFloors   = &v1alpha1.PolicyFloor{Ingress: &v1alpha1.PolicyScope{}, Egress: &v1alpha1.PolicyScope{CIDRs: []string{"10.0.0.0/8"}}}
)

// TestInterfacePolicy: per direction, the NodePolicy's entry; else, where
// the network's floor isolates the direction, nothing allowed; else open.
func TestInterfacePolicy(t *testing.T) {
	for _, tc := range []struct {
		name          string
		listed        portsecurity.PolicyPort
		floor         *v1alpha1.PolicyFloor
		wantIn, wantO portsecurity.PolicyDirection
	}{
		{"nothing listed, no floor: open", portsecurity.PolicyPort{}, nil, none, none},
		{"listed, no floor: as listed", portsecurity.PolicyPort{In: fromPeer, Out: toPeer}, nil, fromPeer, toPeer},
		{"ingress floor, not listed yet: ingress isolated allowing nothing", portsecurity.PolicyPort{}, ingressFloor, nothing, none},
		{"egress floor, not listed yet: egress isolated allowing nothing", portsecurity.PolicyPort{}, egressFloor, none, nothing},
		{"both floors, not listed yet", portsecurity.PolicyPort{}, bothFloors, nothing, nothing},
		{"both floors, ingress listed: egress still closed", portsecurity.PolicyPort{In: fromPeer}, bothFloors, fromPeer, nothing},
		{"ingress floor, both listed: as listed", portsecurity.PolicyPort{In: fromPeer, Out: toPeer}, ingressFloor, fromPeer, toPeer},
		{"floor of neither direction", portsecurity.PolicyPort{Out: toPeer}, &v1alpha1.PolicyFloor{}, none, toPeer},
		{"an allow without isolation is no policy", portsecurity.PolicyPort{In: portsecurity.PolicyDirection{Allow: fromPeer.Allow}}, nil, none, none},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, out := interfacePolicy(tc.listed, tc.floor)
			if !reflect.DeepEqual(in, tc.wantIn) || !reflect.DeepEqual(out, tc.wantO) {
				t.Fatalf("interfacePolicy = in %+v out %+v, want in %+v out %+v", in, out, tc.wantIn, tc.wantO)
			}
		})
	}
}

// TestSetPolicies: each interface gets the floor of the network its
// approval names in its profile, and the NodePolicy's entry of its name.
func TestSetPolicies(t *testing.T) {
	profiles := []v1alpha1.NetworkProfile{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{
			{Name: "data", PolicyFloor: ingressFloor}, {Name: "open"},
		}}},
		// The same network name in another profile has another floor.
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{
			{Name: "open", PolicyFloor: egressFloor},
		}}},
	}
	a := &v1alpha1.Approval{Interfaces: []v1alpha1.ApprovedInterface{
		{Interface: "net1", Profile: "a", Network: "data"},
		{Interface: "net2", Profile: "a", Network: "open"},
		{Interface: "net3", Profile: "a", Network: "data"},
		{Interface: "net4", Profile: "gone", Network: "data"},
	}}
	p, err := planPod("uid-1", "/run/netns/x", a, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	setPolicies(&p, a, profiles, map[string]portsecurity.PolicyPort{"net1": {Port: "net1", In: fromPeer}, "net2": {Port: "net2", Out: toPeer}})
	want := map[string][2]portsecurity.PolicyDirection{
		"net1": {fromPeer, none}, "net2": {none, toPeer}, "net3": {nothing, none}, "net4": {none, none},
	}
	for _, ifc := range p.Interfaces {
		if got := [2]portsecurity.PolicyDirection{ifc.PolicyIn, ifc.PolicyOut}; !reflect.DeepEqual(got, want[ifc.Name]) {
			t.Errorf("%s: in %+v out %+v, want %+v", ifc.Name, got[0], got[1], want[ifc.Name])
		}
	}
}

func key(uid, ifc string) netpolicy.InterfaceKey {
	return netpolicy.InterfaceKey{PodUID: uid, Interface: ifc}
}

// TestPolicyChanges: the pods to look at again are those with an
// interface whose listed policy was added, changed or removed, and no
// other.
func TestPolicyChanges(t *testing.T) {
	was := map[netpolicy.InterfaceKey]portsecurity.PolicyPort{
		key("same", "net1"):    {Port: "net1", In: fromPeer},
		key("changed", "net1"): {Port: "net1", In: fromPeer},
		key("changed", "net2"): {Port: "net2", Out: toPeer},
		key("removed", "net1"): {Port: "net1", In: nothing},
		key("one-of", "net1"):  {Port: "net1", In: fromPeer},
		key("one-of", "net2"):  {Port: "net2", In: fromPeer},
		key("dir", "net1"):     {Port: "net1", In: nothing},
	}
	is := map[netpolicy.InterfaceKey]portsecurity.PolicyPort{
		key("same", "net1"):    {Port: "net1", In: portsecurity.PolicyDirection{Isolated: true, Allow: slices.Clone(fromPeer.Allow)}},
		key("changed", "net1"): {Port: "net1", In: fromPeer},
		key("changed", "net2"): {Port: "net2", Out: portsecurity.PolicyDirection{Isolated: true, Allow: append(slices.Clone(toPeer.Allow), fromPeer.Allow...)}},
		key("added", "net1"):   {Port: "net1", Out: nothing},
		key("one-of", "net1"):  {Port: "net1", In: fromPeer},
		key("dir", "net1"):     {Port: "net1", Out: nothing},
	}
	got := policyChanges(was, is)
	want := map[string]bool{"changed": true, "removed": true, "added": true, "one-of": true, "dir": true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("policyChanges = %v, want %v", got, want)
	}
	if got := policyChanges(nil, nil); len(got) != 0 {
		t.Fatalf("no policy before or after: %v", got)
	}
}

// TestNodePolicyChangeRequeuesItsPods: a NodePolicy that arrives,
// changes or goes requeues exactly the node's pods whose interfaces'
// policies changed; another node's NodePolicy and an unreadable one
// change nothing.
func TestNodePolicyChangeRequeuesItsPods(t *testing.T) {
	h := newHarness(t, newPod("a", "one", "good"), newPod("b", "one", "good"), newPod("c", "one", "good"))
	ctx := context.Background()
	requeued := func(np *v1alpha1.NodePolicy) []string {
		t.Helper()
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		defer q.ShutDown()
		var obj client.Object // nil: the NodePolicy was deleted
		if np != nil {
			obj = np
		}
		h.r.nodePolicyChanged(ctx, obj, q)
		var names []string
		for q.Len() > 0 {
			req, _ := q.Get()
			names = append(names, req.Name)
			q.Done(req)
		}
		slices.Sort(names)
		return names
	}
	policy := func(node string, ifcs ...v1alpha1.InterfacePolicy) *v1alpha1.NodePolicy {
		return &v1alpha1.NodePolicy{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: v1alpha1.NodePolicySpec{
			Peers: []v1alpha1.PeerList{{Name: "p0", Prefixes: "10.0.0.1/32"}}, Sets: []v1alpha1.PolicySet{{Name: "s0", Allow: []string{"p0 tcp 80"}}, {Name: "s1"}},
			Interfaces: ifcs,
		}}
	}
	in := func(uid, set string) v1alpha1.InterfacePolicy {
		return v1alpha1.InterfacePolicy{PodUID: uid, Interface: "net1", Ingress: set}
	}
	steps := []struct {
		name string
		np   *v1alpha1.NodePolicy
		want []string
	}{
		{"first: a and b listed", policy(node, in("uid-a", "s0"), in("uid-b", "s0")), []string{"a", "b"}},
		{"same again", policy(node, in("uid-a", "s0"), in("uid-b", "s0")), nil},
		{"b's set changes", policy(node, in("uid-a", "s0"), in("uid-b", "s1")), []string{"b"}},
		{"another node's", policy("other-node", in("uid-c", "s0")), nil},
		{"unreadable: names no set", policy(node, in("uid-c", "s9")), nil},
		{"a goes, c comes", policy(node, in("uid-b", "s1"), in("uid-c", "s0")), []string{"a", "c"}},
		{"deleted", nil, []string{"b", "c"}},
	}
	for _, s := range steps {
		if got := requeued(s.np); !slices.Equal(got, s.want) {
			t.Fatalf("%s: requeued %v, want %v", s.name, got, s.want)
		}
	}
}

// TestReconcileGivesInterfacesTheirPolicy: the dataplane gets each
// interface's policy from the NodePolicy and its network's floor.
func TestReconcileGivesInterfacesTheirPolicy(t *testing.T) {
	profile := &v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: v1alpha1.NetworkProfileSpec{
		Networks: []v1alpha1.Network{{Name: "data", PolicyFloor: bothFloors}, {Name: "uplink"}},
	}}
	h := newHarness(t, newPod("p", "floored", "good"), profile)
	a := &v1alpha1.Approval{Namespace: "tenant", Interfaces: []v1alpha1.ApprovedInterface{
		{Interface: "net1", Profile: "demo", Network: "data", Kind: v1alpha1.KindBridge, Bridge: "pnbr-data"},
		{Interface: "net2", Profile: "demo", Network: "uplink", Kind: v1alpha1.KindMacvlan, Master: "eth1"},
	}}
	h.r.Verifier = fakeVerifier{approvals: map[string]*v1alpha1.Approval{"floored": a}}
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	h.r.policies.replace(map[netpolicy.InterfaceKey]portsecurity.PolicyPort{
		key("uid-p", "net1"): {Port: "net1", In: fromPeer},
		key("uid-p", "net2"): {Port: "net2", Out: toPeer},
	})
	if _, err := h.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "tenant", Name: "p"}}); err != nil {
		t.Fatal(err)
	}
	if len(h.dp.applied) != 1 {
		t.Fatalf("applied %d times, want once", len(h.dp.applied))
	}
	got := h.dp.applied[0].Interfaces
	if !reflect.DeepEqual(got[0].PolicyIn, fromPeer) || !reflect.DeepEqual(got[0].PolicyOut, nothing) {
		t.Errorf("net1 (floored both ways, ingress listed): in %+v out %+v", got[0].PolicyIn, got[0].PolicyOut)
	}
	if !reflect.DeepEqual(got[1].PolicyIn, none) || !reflect.DeepEqual(got[1].PolicyOut, toPeer) {
		t.Errorf("net2 (no floor, egress listed): in %+v out %+v", got[1].PolicyIn, got[1].PolicyOut)
	}
}
