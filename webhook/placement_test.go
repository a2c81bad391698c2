package webhook

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
)

// uplinkProfile offers t1 the macvlan network "uplink" on data0, only on
// nodes labelled zone=a.
func uplinkProfile() *v1alpha1.NetworkProfile {
	return &v1alpha1.NetworkProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "uplink", Generation: 1},
		Spec: v1alpha1.NetworkProfileSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "telco"}},
			MaxInterfaces:     4,
			Networks: []v1alpha1.Network{{
				Name:         "uplink",
				Macvlan:      &v1alpha1.MacvlanNetwork{Master: "data0", Mode: "bridge"},
				NodeSelector: &v1alpha1.NetworkNodeSelector{MatchLabels: map[string]string{"zone": "a"}},
			}},
		},
	}
}

func placementFixture(t *testing.T) *fixture {
	return newFixture(t, testNamespace("t1", map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"}), TelcoProfile(), uplinkProfile())
}

var uplinkNeeds = []corev1.NodeSelectorRequirement{
	{Key: "carry.podnet.io/mod.macvlan", Operator: corev1.NodeSelectorOpExists},
	{Key: "carry.podnet.io/nic.data0", Operator: corev1.NodeSelectorOpExists},
	{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}},
}

func affinityPatch(t *testing.T, ops []byte) bool {
	t.Helper()
	return strings.Contains(string(ops), `"/spec/affinity"`)
}

// TestCreatePlacesPodWhereItsNetworkCanBeCarried: the network's needs and
// nodeSelector are ANDed into each of the pod's own terms, and a second
// pass over the admitted pod adds nothing.
func TestCreatePlacesPodWhereItsNetworkCanBeCarried(t *testing.T) {
	f := placementFixture(t)
	pod := testPod(map[string]string{v1alpha1.NetworksAnnotation: "uplink, data"})
	rack := func(v string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "rack", Operator: corev1.NodeSelectorOpIn, Values: []string{v}}}}
	}
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{rack("x"), rack("y")}}}}
	req := createRequest(t, pod)
	resp := f.h.Handle(context.Background(), req)
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	got := applyPatch(t, req, resp)
	terms := got.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 2 {
		t.Fatalf("terms = %v, want the pod's two", terms)
	}
	for i, v := range []string{"x", "y"} {
		want := append(rack(v).MatchExpressions, uplinkNeeds...)
		if !apiequality.Semantic.DeepEqual(terms[i].MatchExpressions, want) {
			t.Errorf("term %d = %v, want %v", i, terms[i].MatchExpressions, want)
		}
	}

	// The API server calls the webhook again (reinvocation): no change.
	again := createRequest(t, got)
	resp = f.h.Handle(context.Background(), again)
	ops, _ := json.Marshal(resp.Patches)
	if !resp.Allowed || affinityPatch(t, ops) {
		t.Errorf("second pass: allowed %v, patches %s", resp.Allowed, ops)
	}
}

// TestUpdateLeavesAffinity: the API server forbids changing affinity
// after CREATE, and a re-judged pod gets nothing stacked on it.
func TestUpdateLeavesAffinity(t *testing.T) {
	f := placementFixture(t)
	pod := f.admitted(t, map[string]string{v1alpha1.NetworksAnnotation: "uplink"})
	changed := pod.DeepCopy()
	changed.Annotations[v1alpha1.NetworksAnnotation] = "uplink, data"
	resp := f.h.Handle(context.Background(), updateRequest(t, pod, changed))
	ops, _ := json.Marshal(resp.Patches)
	if !resp.Allowed || affinityPatch(t, ops) {
		t.Errorf("update: allowed %v, patches %s", resp.Allowed, ops)
	}
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || !apiequality.Semantic.DeepEqual(terms[0].MatchExpressions, uplinkNeeds) {
		t.Errorf("created pod's terms = %v, want one of %v", terms, uplinkNeeds)
	}
}

// TestCreateNeedsNothingGetsNoAffinity: a node-local bridge needs nothing
// of a node; a pod bound by name skips the scheduler (its agent reports
// NodeCannotCarry instead of the kubelet's bare NodeAffinity refusal).
func TestCreateNeedsNothingGetsNoAffinity(t *testing.T) {
	f := placementFixture(t)
	bound := testPod(map[string]string{v1alpha1.NetworksAnnotation: "uplink"})
	bound.Spec.NodeName = "n2"
	for name, pod := range map[string]*corev1.Pod{
		"bridge only":   testPod(map[string]string{v1alpha1.NetworksAnnotation: "data"}),
		"bound by name": bound,
	} {
		resp := f.h.Handle(context.Background(), createRequest(t, pod))
		ops, _ := json.Marshal(resp.Patches)
		if !resp.Allowed || affinityPatch(t, ops) {
			t.Errorf("%s: allowed %v, patches %s", name, resp.Allowed, ops)
		}
	}
}

// TestCreateDeniedForABrokenNodeSelector: a selector the CRD would
// refuse (a profile made without it) denies the pod, naming the field.
func TestCreateDeniedForABrokenNodeSelector(t *testing.T) {
	p := uplinkProfile()
	p.Spec.Networks[0].NodeSelector = &v1alpha1.NetworkNodeSelector{MatchExpressions: []v1alpha1.NodeSelectorExpression{{Key: "zone", Operator: "Gt", Values: []string{"1"}}}}
	f := newFixture(t, []client.Object{testNamespace("t1", map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"}), p}...)
	resp := f.h.Handle(context.Background(), createRequest(t, testPod(map[string]string{v1alpha1.NetworksAnnotation: "uplink"})))
	wantDenied(t, resp, "nodeSelector.matchExpressions[0].operator")
}
