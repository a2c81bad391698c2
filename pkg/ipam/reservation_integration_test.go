package ipam_test

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam"
)

// createStatefulSet creates a StatefulSet object (envtest runs no
// controller: its pods are made by hand) and returns it.
func createStatefulSet(t testing.TB, c client.Client, ns, name string, replicas int32) *appsv1.StatefulSet {
	t.Helper()
	labels := map[string]string{"app": name}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if err := c.Create(context.Background(), sts); err != nil {
		t.Fatalf("create StatefulSet %s/%s: %v", ns, name, err)
	}
	return sts
}

// createOwnedPod creates pod name whose controller reference names a
// StatefulSet of the given name and UID (real or not), and returns it as
// an Owner with the hold its approval grants.
func createOwnedPod(t testing.TB, c client.Client, ns, name, sts string, stsUID types.UID, node string, persist *v1alpha1.ApprovedPersistence) ipam.Owner {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts, UID: stsUID, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if err := c.Create(context.Background(), pod); err != nil {
		t.Fatalf("create pod %s/%s: %v", ns, name, err)
	}
	return ipam.Owner{Namespace: ns, Name: name, UID: string(pod.UID), Node: node, Reservation: ipam.ReservationOf(pod, persist)}
}

// TestIntegrationReservedAddressesFollowTheStatefulSetPod: a StatefulSet
// pod's address and quota slot outlive the pod (the agent's whole-pod
// release leaves them); no other pod takes the address (static ask,
// pool walk over a dead holder) or the slot (quota), not a bare pod of
// the same name faking a reference to another StatefulSet, not a pod of
// the same name in another namespace; the next pod of the StatefulSet
// with that name, on another node, takes both over and gets the same
// address, and the claims now carry its UID and node.
func TestIntegrationReservedAddressesFollowTheStatefulSetPod(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	c := directClient(t, env)
	nsS, nsX := createNamespace(t, c, "tenant-s"), createNamespace(t, c, "tenant-x")
	persist := &v1alpha1.ApprovedPersistence{StatefulSets: true, ReleaseAfterSeconds: 600}
	pool := "10.46.0.0/30" // two usable addresses
	approval := v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{pool}, MaxPerNamespace: 1, Persistent: persist}
	a := newAllocator(t, env)

	sts := createStatefulSet(t, c, nsS, "web", 1)
	first := createOwnedPod(t, c, nsS, "web-0", "web", sts.UID, "node-a", persist)
	if first.Reservation == nil {
		t.Fatal("a pod of a StatefulSet on a persistent network got no hold")
	}
	got, err := a.Ensure(ctx, first, "data", "net1", approval)
	if err != nil {
		t.Fatal(err)
	}
	held := got[0].IP.String()
	if err := a.Release(ctx, first.UID, "", ""); err != nil {
		t.Fatal(err)
	}
	deletePod(t, c, first)
	if left := claimsOf(t, c, first.UID); len(left) != 2 {
		t.Fatalf("after the pod went, %d of its claims are left, want its address and its slot", len(left))
	}

	// Another pod of the namespace: the held slot counts, no address.
	other := createPod(t, c, nsS)
	var over *ipam.QuotaExceededError
	if _, err := a.Ensure(ctx, other, "data", "net1", approval); !errors.As(err, &over) {
		t.Fatalf("another pod beside a held address under a cap of 1: err = %v, want QuotaExceededError", err)
	}
	// A pod of another namespace asks for the held address itself.
	stranger := createPod(t, c, nsX)
	static := approval
	static.Static = []string{held + "/30"}
	var conflict *ipam.ConflictError
	if _, err := a.Ensure(ctx, stranger, "data", "net1", static); !errors.As(err, &conflict) {
		t.Fatalf("a stranger asking for the held address %s: err = %v, want ConflictError", held, err)
	}
	// A pod of the same name in another namespace, of its own StatefulSet.
	xsts := createStatefulSet(t, c, nsX, "web", 1)
	twin := createOwnedPod(t, c, nsX, "web-0", "web", xsts.UID, "node-a", persist)
	if n, err := a.Adopt(ctx, twin, "data", "net1"); err != nil || n != 0 {
		t.Fatalf("a pod of the same name in another namespace took over %d claims (%v)", n, err)
	}
	// A bare pod of the same name faking a reference to another StatefulSet.
	fake := createOwnedPod(t, c, nsS, "web-0", "web", "made-up-uid", "node-a", persist)
	if n, err := a.Adopt(ctx, fake, "data", "net1"); err != nil || n != 0 {
		t.Fatalf("a pod faking its StatefulSet took over %d claims (%v)", n, err)
	}
	deletePod(t, c, fake)

	// The next pod of the StatefulSet, on another node.
	next := createOwnedPod(t, c, nsS, "web-0", "web", sts.UID, "node-b", persist)
	b := newAllocator(t, env)
	if n, err := b.Adopt(ctx, next, "data", "net1"); err != nil || n != 2 {
		t.Fatalf("the next pod took over %d claims (%v), want its address and its slot", n, err)
	}
	again, err := b.Ensure(ctx, next, "data", "net1", approval)
	if err != nil {
		t.Fatal(err)
	}
	if again[0].IP.String() != held {
		t.Fatalf("the next pod got %s, want the held %s", again[0].IP, held)
	}
	mine := claimsOf(t, c, next.UID)
	if len(mine) != 2 {
		t.Fatalf("the next pod holds %d claims, want 2 (nothing new taken)", len(mine))
	}
	for _, cl := range mine {
		if cl.Labels[v1alpha1.NodeLabel] != "node-b" || cl.Spec.Pod.UID != next.UID {
			t.Fatalf("claim %s after take-over: node %q pod %s, want node-b and the new pod", cl.Name, cl.Labels[v1alpha1.NodeLabel], cl.Spec.Pod.UID)
		}
	}
	// A network removed from the request releases even held claims.
	if err := b.Release(ctx, next.UID, "data", "net1"); err != nil {
		t.Fatal(err)
	}
	if left := claimsOf(t, c, next.UID); len(left) != 0 {
		t.Fatalf("after the interface was released %d claims are left", len(left))
	}
}
