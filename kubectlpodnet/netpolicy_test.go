package kubectlpodnet

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/netpolicy"
)

// policyPod is a pod of namespace ns on network data (net1) with one
// address there, as the webhook and the agent annotate it.
func policyPod(ns, name, app, addr string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}, Annotations: map[string]string{
		v1alpha1.ApprovedAnnotation:      `{"interfaces":[{"interface":"net1","network":"data","profile":"grant","kind":"bridge"}]}`,
		v1alpha1.NetworkStatusAnnotation: fmt.Sprintf(`[{"name":"%s/data","interface":"net1","ips":["%s/24"]}]`, ns, addr),
	}}}
}

// TestExplainPolicy: kubectl podnet policy names the policy that lets
// traffic in, the policies and floor that isolate a pod when nothing
// does, and checks the peer pod's own direction too.
func TestExplainPolicy(t *testing.T) {
	tcp := corev1.ProtocolTCP
	port80 := intstr.FromInt32(80)
	objs := PolicyObjects{
		Pods: []corev1.Pod{
			policyPod("a", "web", "web", "10.0.0.1"), policyPod("a", "client", "client", "10.0.0.2"),
			policyPod("b", "other", "client", "10.0.0.3"),
		},
		Namespaces: map[string]map[string]string{"a": {"kubernetes.io/metadata.name": "a"}, "b": {"kubernetes.io/metadata.name": "b"}},
		Policies: []mnp.MultiNetworkPolicy{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-80", Annotations: map[string]string{netpolicy.PolicyForAnnotation: "data"}},
			Spec: mnp.MultiNetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Ingress: []mnp.MultiNetworkPolicyIngressRule{{From: []mnp.MultiNetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}},
					Ports: []mnp.MultiNetworkPolicyPort{{Protocol: &tcp, Port: &port80}}}}},
		}},
		Profiles: []v1alpha1.NetworkProfile{{ObjectMeta: metav1.ObjectMeta{Name: "grant"}, Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{{
			Name: "data", PolicyFloor: &v1alpha1.PolicyFloor{Egress: &v1alpha1.PolicyScope{SameNamespace: true}},
		}}}}},
	}
	for _, tc := range []struct {
		query   PolicyQuery
		allowed bool
		says    []string
	}{
		{PolicyQuery{Namespace: "a", Pod: "web", Ingress: true, Peer: "client", Protocol: tcp, Port: 80}, true,
			[]string{"net1 ingress of a/web, peer 10.0.0.2: allowed by a/web-80", "net1 egress of a/client, peer 10.0.0.1: allowed by policyFloor"}},
		{PolicyQuery{Namespace: "a", Pod: "web", Ingress: true, Peer: "client", Protocol: tcp, Port: 81}, false,
			[]string{"ingress of a/web, peer 10.0.0.2: denied: isolated by a/web-80"}},
		// b/other's egress stays in its own namespace (the floor).
		{PolicyQuery{Namespace: "a", Pod: "web", Ingress: true, Peer: "b/other", Protocol: tcp, Port: 80}, false,
			[]string{"ingress of a/web, peer 10.0.0.3: allowed by a/web-80", "egress of b/other, peer 10.0.0.1: denied: isolated by policyFloor"}},
		{PolicyQuery{Namespace: "a", Pod: "client", Ingress: true, Peer: "10.9.9.9"}, true,
			[]string{"icmp on network data: allowed", "ingress of a/client, peer 10.9.9.9: not isolated"}},
	} {
		tc.query.Network = "data"
		ans, err := explainPolicy(objs, tc.query)
		if err != nil {
			t.Fatalf("%+v: %v", tc.query, err)
		}
		var out bytes.Buffer
		if err := writePolicy(&out, ans); err != nil {
			t.Fatal(err)
		}
		if ans.Allowed != tc.allowed {
			t.Errorf("%+v: allowed %v, want %v:\n%s", tc.query, ans.Allowed, tc.allowed, out.String())
		}
		for _, s := range tc.says {
			if !strings.Contains(out.String(), s) {
				t.Errorf("%+v: answer does not say %q:\n%s", tc.query, s, out.String())
			}
		}
	}
	if _, err := explainPolicy(objs, PolicyQuery{Namespace: "a", Pod: "web", Network: "other", Peer: "client"}); err == nil || !strings.Contains(err.Error(), `no interface on network "other"`) {
		t.Errorf("a pod off the network: %v", err)
	}
	if _, _, err := parseTraffic("tcp/0"); err == nil {
		t.Error("port 0 taken")
	}
}

// TestExplainPodPolicies: explain names, per network of the pod, what
// isolates each direction: its namespace's policies for that network that
// select it, and its profile's floor; another namespace's policy, one for
// another network and one that selects other pods do not count.
func TestExplainPodPolicies(t *testing.T) {
	pod := policyPod("a", "web", "web", "10.0.0.1")
	pod.Annotations[v1alpha1.ApprovedAnnotation] = `{"interfaces":[{"interface":"net1","network":"data","profile":"grant","kind":"bridge","bridge":"br"},` +
		`{"interface":"net2","network":"open","profile":"grant","kind":"bridge","bridge":"br2"}]}`
	pol := func(ns, name, network string, spec mnp.MultiNetworkPolicySpec) mnp.MultiNetworkPolicy {
		return mnp.MultiNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{netpolicy.PolicyForAnnotation: network}}, Spec: spec}
	}
	egress := mnp.MultiNetworkPolicySpec{PolicyTypes: []mnp.MultiPolicyType{mnp.PolicyTypeEgress}}
	policies := []mnp.MultiNetworkPolicy{
		pol("a", "out", "data", egress),
		pol("b", "theirs", "data", mnp.MultiNetworkPolicySpec{PolicyTypes: []mnp.MultiPolicyType{mnp.PolicyTypeIngress}}),
		pol("a", "db-only", "data", mnp.MultiNetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, PolicyTypes: []mnp.MultiPolicyType{mnp.PolicyTypeIngress}}),
		pol("a", "elsewhere", "other", egress),
	}
	profiles := []v1alpha1.NetworkProfile{{ObjectMeta: metav1.ObjectMeta{Name: "grant"}, Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{
		{Name: "data", PolicyFloor: &v1alpha1.PolicyFloor{Ingress: &v1alpha1.PolicyScope{SameNamespace: true}}}, {Name: "open"},
	}}}}
	e := explainPod(PodFacts{Pod: &pod, Policies: policies, Profiles: profiles})
	want := []PolicyLine{
		{Network: "data", Interface: "net1", Ingress: []string{netpolicy.FloorName}, Egress: []string{"a/out"}},
		{Network: "open", Interface: "net2"},
	}
	if fmt.Sprint(e.Policy) != fmt.Sprint(want) {
		t.Errorf("policy lines %+v, want %+v", e.Policy, want)
	}
	var b bytes.Buffer
	if err := writeExplain(&b, e); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"net1       data     isolated by policyFloor  isolated by a/out", "net2       open     open                     open"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("explain does not print %q:\n%s", line, b.String())
		}
	}
	// Unknown (the caller may not read policies): nothing said.
	if e := explainPod(PodFacts{Pod: &pod, PoliciesUnknown: true}); e.Policy != nil {
		t.Errorf("policy lines without the policies: %+v", e.Policy)
	}
}
