package macpool_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/pkg/macpool"
	"podnet.io/podnet/test/testenv"
)

// TestIntegrationHeldMACFollowsTheStatefulSetPod: a StatefulSet pod's MAC
// and MAC quota slot outlive the pod; another pod asking for that MAC
// gets a conflict and one more pod of the namespace finds the quota
// full; the next pod of the StatefulSet with that name, on another node,
// takes both over and gets the same MAC.
func TestIntegrationHeldMACFollowsTheStatefulSetPod(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	c := env.Client
	createNamespace(t, c, "tenant-s")
	persist := &v1alpha1.ApprovedPersistence{StatefulSets: true, ReleaseAfterSeconds: 600}
	r := v1alpha1.ApprovedMACRange{Start: "02:00:00:00:09:00", End: "02:00:00:00:09:0f", MaxPerNamespace: 1}
	owned := func(node string) ipam.Owner {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-s", Name: "web-0",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: types.UID("sts-1"), Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if err := c.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		return ipam.Owner{Namespace: "tenant-s", Name: "web-0", UID: string(pod.UID), Node: node, Reservation: ipam.ReservationOf(pod, persist)}
	}
	a := newAllocator(t, env)
	first := owned("node-a")
	mac, err := a.Ensure(ctx, first, "data", "net1", "", r)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, first.UID, "", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-s", Name: "web-0"}}); err != nil {
		t.Fatal(err)
	}
	if left := macClaims(t, c, client.MatchingLabels{v1alpha1.PodUIDLabel: first.UID}); len(left) != 2 {
		t.Fatalf("after the pod went %d of its MAC claims are left, want the MAC and its slot", len(left))
	}
	other := createPod(t, c, "tenant-s")
	var over *macpool.QuotaExceededError
	if _, err := a.Ensure(ctx, other, "data", "net1", "", r); !errors.As(err, &over) {
		t.Fatalf("another pod beside a held MAC under a quota of 1: err = %v, want QuotaExceededError", err)
	}
	createNamespace(t, c, "tenant-x")
	stranger := createPod(t, c, "tenant-x")
	var conflict *macpool.ConflictError
	if _, err := a.Ensure(ctx, stranger, "data", "net1", mac.String(), r); !errors.As(err, &conflict) {
		t.Fatalf("a stranger asking for the held MAC %s: err = %v, want ConflictError", mac, err)
	}

	next := owned("node-b")
	b := newAllocator(t, env)
	if n, err := b.Adopt(ctx, next, "data", "net1"); err != nil || n != 2 {
		t.Fatalf("the next pod took over %d MAC claims (%v), want 2", n, err)
	}
	again, err := b.Ensure(ctx, next, "data", "net1", "", r)
	if err != nil {
		t.Fatal(err)
	}
	if again.String() != mac.String() {
		t.Fatalf("the next pod got MAC %s, want the held %s", again, mac)
	}
	for _, cl := range macClaims(t, c, client.MatchingLabels{v1alpha1.PodUIDLabel: next.UID}) {
		if cl.Labels[v1alpha1.NodeLabel] != "node-b" {
			t.Fatalf("MACClaim %s after take-over labelled node %q, want node-b", cl.Name, cl.Labels[v1alpha1.NodeLabel])
		}
	}
}
