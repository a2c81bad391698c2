package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
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

// TestIntegrationControllerKeepsClaimsReservedForStatefulSets: the address
// and MAC claims of a StatefulSet's pod outlive the pod while the
// StatefulSet's replicas reach its ordinal, and are collected once it is
// scaled below it; a pod whose reference names no real StatefulSet (a
// bare pod faking one) keeps nothing once gone; a pod of a StatefulSet
// that is deleted keeps nothing either.
func TestIntegrationControllerKeepsClaimsReservedForStatefulSets(t *testing.T) {
	env := sharedEnv(t)
	c := env.Client
	ctx := context.Background()
	ns := testNamespace(t, c, "reservations", nil)
	startController(t, env, time.Second)

	persist := &v1alpha1.ApprovedPersistence{StatefulSets: true, ReleaseAfterSeconds: 2}
	approval := v1alpha1.ApprovedIPAM{AddressSpace: "pnbr-data.bridge", Pools: []string{"10.43.0.0/24"}, MaxPerNamespace: 8, Persistent: persist}
	macs := v1alpha1.ApprovedMACRange{Start: "02:00:00:00:08:00", End: "02:00:00:00:08:0f", MaxPerNamespace: 8}
	ips, mac := ipam.New(c, nil), macpool.New(c, nil)
	web := createStatefulSetIn(t, c, ns, "web", 2)
	db := createStatefulSetIn(t, c, ns, "db", 1)
	claim := func(name, sts string, uid types.UID) ipam.Owner {
		t.Helper()
		o := createStsPod(t, c, ns, name, sts, uid, persist)
		if _, err := ips.Ensure(ctx, o, "data", "net1", approval); err != nil {
			t.Fatal(err)
		}
		if _, err := mac.Ensure(ctx, o, "data", "net1", "", macs); err != nil {
			t.Fatal(err)
		}
		return o
	}
	kept, fake, dropped, doomed := claim("web-1", "web", web.UID), claim("fake-0", "fake", "made-up"), claim("web-0", "web", web.UID), claim("db-0", "db", db.UID)
	for _, o := range []ipam.Owner{kept, fake, dropped, doomed} {
		if err := c.Delete(ctx, podOf(o), client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(ctx, db); err != nil {
		t.Fatal(err)
	}
	count := func(uid string) (int, error) {
		var ipl v1alpha1.IPClaimList
		var macl v1alpha1.MACClaimList
		if err := c.List(ctx, &ipl, client.MatchingLabels{v1alpha1.PodUIDLabel: uid}); err != nil {
			return 0, err
		}
		err := c.List(ctx, &macl, client.MatchingLabels{v1alpha1.PodUIDLabel: uid})
		return len(ipl.Items) + len(macl.Items), err
	}
	testenv.Eventually(t, time.Minute, "claims of a fake StatefulSet's pod and of a deleted StatefulSet's pod collected", func(context.Context) error {
		for _, o := range []ipam.Owner{fake, doomed} {
			if n, err := count(o.UID); err != nil || n > 0 {
				return fmt.Errorf("pod %s still holds %d claims (%v)", o.Name, n, err)
			}
		}
		return nil
	})
	// The controller has seen the deletions and waited out releaseAfter
	// for the pods above; the held pods' claims must all still be there.
	for _, o := range []ipam.Owner{kept, dropped} {
		if n, err := count(o.UID); err != nil || n != 4 {
			t.Fatalf("pod %s of a StatefulSet that holds it keeps %d claims (%v), want 4", o.Name, n, err)
		}
	}
	// Scale to 1: web-1 is released, web-0 stays.
	if err := c.Get(ctx, client.ObjectKeyFromObject(web), web); err != nil {
		t.Fatal(err)
	}
	web.Spec.Replicas = ptr.To(int32(1))
	if err := c.Update(ctx, web); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "claims of the pod above the scaled-down StatefulSet's replicas collected", func(context.Context) error {
		if n, err := count(kept.UID); err != nil || n > 0 {
			return fmt.Errorf("web-1 still holds %d claims (%v)", n, err)
		}
		return nil
	})
	if n, err := count(dropped.UID); err != nil || n != 4 {
		t.Fatalf("web-0, below the replicas, keeps %d claims (%v), want 4", n, err)
	}
}

func createStatefulSetIn(t *testing.T, c client.Client, ns, name string, replicas int32) *appsv1.StatefulSet {
	t.Helper()
	labels := map[string]string{"app": name}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if err := c.Create(context.Background(), sts); err != nil {
		t.Fatal(err)
	}
	return sts
}

// createStsPod creates pod name of namespace ns on node-a, approved net1 on data, whose
// controller reference names StatefulSet sts of uid.
func createStsPod(t *testing.T, c client.Client, ns, name, sts string, uid types.UID, persist *v1alpha1.ApprovedPersistence) ipam.Owner {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Annotations:     map[string]string{v1alpha1.ApprovedAnnotation: `{"interfaces":[{"interface":"net1","network":"data"}]}`},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts, UID: uid, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if err := c.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	return ipam.Owner{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), Node: "node-a", Reservation: ipam.ReservationOf(pod, persist)}
}
