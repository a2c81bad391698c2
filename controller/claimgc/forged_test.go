package claimgc

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/controller/infocache"
)

// TestForgery: a claim its pod's own agent would make is not forged;
// each way a claim can disagree with its live pod is, and says how.
func TestForgery(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "p", UID: "u",
			Annotations: map[string]string{v1alpha1.ApprovedAnnotation: `{"interfaces":[{"interface":"net1","network":"data"}]}`}},
		Spec: corev1.PodSpec{NodeName: "n1"},
	}
	ref := v1alpha1.PodReference{Namespace: "t1", Name: "p", UID: "u"}
	addr := func() *v1alpha1.IPClaim {
		return &v1alpha1.IPClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "10-0-0-7", Labels: map[string]string{v1alpha1.NodeLabel: "n1", v1alpha1.NamespaceLabel: "t1"}},
			Spec:       v1alpha1.IPClaimSpec{Network: "data", Address: "10.0.0.7", Pool: "10.0.0.0/24", Interface: "net1", Pod: ref},
		}
	}
	slot := func() *v1alpha1.IPClaim {
		c := addr()
		k := int32(3)
		c.Name, c.Spec.Address, c.Spec.Slot = "10-0-0-0-24.t1.3", "", &k
		return c
	}
	cases := []struct {
		name  string
		claim *v1alpha1.IPClaim
		pod   func(p *corev1.Pod)
		want  string // "" when held
	}{
		{name: "address of the pod's agent", claim: addr()},
		{name: "legacy address name", claim: func() *v1alpha1.IPClaim { c := addr(); c.Name = "data.10-0-0-7"; return c }()},
		{name: "slot of the pod's agent", claim: slot()},
		{name: "claim without labels (not an agent's)", claim: func() *v1alpha1.IPClaim { c := addr(); c.Labels = nil; return c }()},
		{name: "approval this version cannot read", claim: addr(), pod: func(p *corev1.Pod) { p.Annotations[v1alpha1.ApprovedAnnotation] = "{" }},
		{name: "another node", claim: func() *v1alpha1.IPClaim { c := addr(); c.Labels[v1alpha1.NodeLabel] = "n2"; return c }(), want: `node "n2"`},
		{name: "another namespace label", claim: func() *v1alpha1.IPClaim { c := addr(); c.Labels[v1alpha1.NamespaceLabel] = "t2"; return c }(), want: `namespace "t2"`},
		{name: "slot of another namespace", claim: func() *v1alpha1.IPClaim { c := slot(); c.Name = "10-0-0-0-24.t2.3"; return c }(), want: "not one of that namespace's slots"},
		{name: "slot named with another number", claim: func() *v1alpha1.IPClaim { c := slot(); c.Name = "10-0-0-0-24.t1.4"; return c }(), want: "slots"},
		{name: "address name of another address", claim: func() *v1alpha1.IPClaim { c := addr(); c.Name = "10-0-0-8"; return c }(), want: "not the name of its address"},
		{name: "no address", claim: func() *v1alpha1.IPClaim { c := addr(); c.Spec.Address = "x"; return c }(), want: "not an IP address"},
		{name: "interface not approved", claim: func() *v1alpha1.IPClaim { c := addr(); c.Spec.Interface = "net9"; return c }(), want: `no interface "net9"`},
		{name: "network not approved", claim: func() *v1alpha1.IPClaim { c := addr(); c.Spec.Network = "other"; return c }(), want: `network "other"`},
		{name: "pod without approval", claim: addr(), pod: func(p *corev1.Pod) { p.Annotations = nil }, want: "no podnet approval"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := pod.DeepCopy()
			if tc.pod != nil {
				tc.pod(p)
			}
			got := forgery(infocache.NewClaimInfo(tc.claim), infocache.NewPodInfo(p))
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("forgery = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestUnapprovedReadsTheApprovalState: a pair the approval does not name
// is not covered; an approval this version cannot read covers every
// claim, a missing one none.
func TestUnapprovedReadsTheApprovalState(t *testing.T) {
	pod := func(approval string) *infocache.PodInfo {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "p", UID: "u", Annotations: map[string]string{}}}
		if approval != "" {
			p.Annotations[v1alpha1.ApprovedAnnotation] = approval
		}
		return infocache.NewPodInfo(p)
	}
	claim := infocache.NewClaimInfo(&v1alpha1.IPClaim{Spec: v1alpha1.IPClaimSpec{Network: "other", Interface: "net9"}})
	if unapproved(claim, pod(`{"interfaces":[{"interface":"net1","network":"data"}]}`)) == "" {
		t.Error("a pair the approval does not name is covered")
	}
	if unapproved(claim, pod("not json")) != "" {
		t.Error("an unreadable approval does not cover every claim")
	}
	if unapproved(claim, pod("")) == "" {
		t.Error("a pod without approval covers a claim")
	}
}
