package netpolicy

import (
	"net/netip"
	"testing"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"podnet.io/podnet/api/v1alpha1"
)

// TestEvaluateNetworkKeepsSpacesApart: one network name offered on two
// bridges with the same CIDR. A pod of the other bridge holds the address
// a pod of another group holds on this one: it is no peer here, neither
// of the floor's group nor of a tenant's selector, or the floor would let
// in whoever holds that address here.
func TestEvaluateNetworkKeepsSpacesApart(t *testing.T) {
	ns := map[string]map[string]string{
		"g1":  {"kubernetes.io/metadata.name": "g1", "group": "1"},
		"g2":  {"kubernetes.io/metadata.name": "g2", "group": "2"},
		"g2b": {"kubernetes.io/metadata.name": "g2b", "group": "2"},
	}
	floor := &Floor{Ingress: &Scope{SameLabel: "group"}}
	web := Pod{Namespace: "g1", Name: "web", Addresses: []netip.Addr{netip.MustParseAddr("10.0.0.7")}}
	other := Pod{Namespace: "g2", Name: "other", Addresses: []netip.Addr{netip.MustParseAddr("10.0.0.8")}}
	// On the other bridge, in a namespace of other's group, at web's address.
	twin := Pod{Namespace: "g2b", Name: "twin", Addresses: []netip.Addr{netip.MustParseAddr("10.0.0.7")}}
	members := []Member{{Pod: web, Floor: floor, Space: "br1.bridge"}, {Pod: other, Floor: floor, Space: "br1.bridge"}, {Pod: twin, Floor: floor, Space: "br2.bridge"}}
	open := Policy{Namespace: "g2", Name: "from-g2b", Spec: mnp.MultiNetworkPolicySpec{
		Ingress: []mnp.MultiNetworkPolicyIngressRule{{From: []mnp.MultiNetworkPolicyPeer{{NamespaceSelector: sel("kubernetes.io/metadata.name", "g2b")}}}}}}
	verdicts, _ := EvaluateNetwork([]Policy{open}, ns, members)
	if v := verdicts["g2/other"]; Allows(v.Ingress, web.Addresses[0], "TCP", 80) {
		t.Errorf("other lets in web's address, which only the other bridge's twin holds in its group: %+v", v.Ingress)
	}
	if !Allows(verdicts["g2b/twin"].Ingress, twin.Addresses[0], "TCP", 80) {
		t.Errorf("twin, alone of its group on its bridge, does not let in itself: %+v", verdicts["g2b/twin"].Ingress)
	}
	// One space: the same pods are each other's peers.
	for i := range members {
		members[i].Space = "br1.bridge"
	}
	verdicts, _ = EvaluateNetwork([]Policy{open}, ns, members)
	if !Allows(verdicts["g2/other"].Ingress, twin.Addresses[0], "TCP", 80) {
		t.Errorf("on one bridge, other does not let in its group's twin: %+v", verdicts["g2/other"].Ingress)
	}
	// No pods: the policies' problems all the same.
	http := intstr.FromString("http")
	named := Policy{Namespace: "g2", Name: "named", Spec: mnp.MultiNetworkPolicySpec{
		Ingress: []mnp.MultiNetworkPolicyIngressRule{{Ports: []mnp.MultiNetworkPolicyPort{{Port: &http}}}}}}
	if _, problems := EvaluateNetwork([]Policy{named}, ns, nil); len(problems) != 1 {
		t.Errorf("problems without pods: %v", problems)
	}
}

// TestProfileFloors: each network's floor by name; a floor FloorOf
// refuses isolates both directions and is reported.
func TestProfileFloors(t *testing.T) {
	p := &v1alpha1.NetworkProfile{Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{
		{Name: "open"},
		{Name: "floored", PolicyFloor: &v1alpha1.PolicyFloor{Ingress: &v1alpha1.PolicyScope{SameNamespace: true}}},
		{Name: "bad", PolicyFloor: &v1alpha1.PolicyFloor{Egress: &v1alpha1.PolicyScope{CIDRs: []string{"not a cidr"}}}},
	}}}
	p.Name = "pr"
	floors, err := ProfileFloors(p)
	if err == nil {
		t.Error("a floor with a bad CIDR was not reported")
	}
	if _, ok := floors["open"]; ok || floors["floored"] == nil || !floors["floored"].Ingress.SameNamespace || floors["floored"].Egress != nil {
		t.Errorf("floors %+v", floors)
	}
	if b := floors["bad"]; b == nil || b.Ingress == nil || b.Egress == nil || len(b.Egress.CIDRs) != 0 {
		t.Errorf("a refused floor %+v, want both directions isolated, allowing nothing", b)
	}
}
