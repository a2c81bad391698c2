package agent

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"podnet.io/podnet/agent/dra"
	"podnet.io/podnet/agent/dra/dratest"
	"podnet.io/podnet/api/v1alpha1"
)

// TestProfileChangeWakesClaimPods: a change of a profile re-judges the
// pods whose prepared claims it granted, though they carry no approval of
// their own; a pod of neither kind is left alone.
func TestProfileChangeWakesClaimPods(t *testing.T) {
	claims := &dra.ClaimNetworks{Verify: func(*resourceapi.ResourceClaim) (*v1alpha1.Approval, error) { return dratest.Approval("net1"), nil }}
	if err := claims.Prepare(dratest.Claim("nets", "claimed", "a")); err != nil {
		t.Fatal(err)
	}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: name, UID: types.UID("uid-" + name)}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(pod("claimed"), pod("plain")).Build()
	r := &Reconciler{Client: c, Claims: claims}
	profile := &v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	got := r.podsOfProfile(context.Background(), profile)
	if len(got) != 1 || got[0].Name != "claimed" {
		t.Errorf("profile p wakes %v, want the claimed pod", got)
	}
	other := &v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: "other"}}
	if got := r.podsOfProfile(context.Background(), other); len(got) != 0 {
		t.Errorf("profile other wakes %v, want none", got)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}}
	if got := r.podsInNamespace(context.Background(), ns); len(got) != 1 || got[0].Name != "claimed" {
		t.Errorf("namespace tenant wakes %v, want the claimed pod", got)
	}
}
