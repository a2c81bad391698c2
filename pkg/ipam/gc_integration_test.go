package ipam_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/test/testenv"
)

// TestIntegrationGarbageCollectorKeepsClusterScopedClaimOfPod shows the
// Kubernetes rule that shapes this package: the real garbage collector
// deletes a namespaced dependent of a deleted Pod, but keeps a
// cluster-scoped IPClaim whose ownerReference names that Pod and reports
// OwnerRefInvalidNamespace instead. So claims cannot rely on the collector;
// their liveness is their pod's, and the same deleted pod's address is taken
// over by the next allocation.
//
// It has an API server of its own, not the shared one: the collector
// reports the event only if it saw the pod before the pod went, and the
// test gives it 2 s to start and sync. On the shared server it must first
// list every object earlier tests left (thousands of pods), and there it
// once missed the pod and reported nothing.
func TestIntegrationGarbageCollectorKeepsClusterScopedClaimOfPod(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	env.StartControllerManager(t, "garbagecollector")
	ctx := context.Background()
	c := directClient(t, env)

	pod := createPod(t, c, "default")
	owner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: toUID(pod.UID)}}
	control := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: "control", OwnerReferences: owner}}
	if err := c.Create(ctx, control); err != nil {
		t.Fatal(err)
	}
	addr := netip.MustParseAddr("10.6.0.1")
	claim := &v1alpha1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:            ipam.ClaimName(testSpace, addr),
			Labels:          map[string]string{v1alpha1.PodUIDLabel: pod.UID, v1alpha1.NetworkLabel: "gc", v1alpha1.NodeLabel: testNode},
			OwnerReferences: owner,
		},
		Spec: v1alpha1.IPClaimSpec{
			Network: "gc", Address: addr.String(), Interface: "net1",
			Pod: v1alpha1.PodReference{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		},
	}
	if err := c.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	// Let the collector's graph see both dependents before the owner goes.
	time.Sleep(2 * time.Second)
	deletePod(t, c, pod)

	testenv.Eventually(t, 90*time.Second, "namespaced dependent collected", func(ctx context.Context) error {
		err := c.Get(ctx, client.ObjectKeyFromObject(control), &corev1.ConfigMap{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("config map still there (err=%v)", err)
	})
	testenv.Eventually(t, 60*time.Second, "OwnerRefInvalidNamespace event for the claim", func(ctx context.Context) error {
		var events corev1.EventList
		if err := c.List(ctx, &events); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "OwnerRefInvalidNamespace" && e.InvolvedObject.Name == claim.Name {
				return nil
			}
		}
		return fmt.Errorf("no such event among %d", len(events.Items))
	})
	if err := c.Get(ctx, client.ObjectKeyFromObject(claim), &v1alpha1.IPClaim{}); err != nil {
		t.Fatalf("the collector was expected to keep the cluster-scoped claim: %v", err)
	}

	// The claim outlived its pod, yet the address is not lost: it is dead,
	// and the next pod takes it over from a full pool.
	next := createPod(t, c, "default")
	got, err := ipam.New(c, c).Ensure(ctx, next, "gc", "net1", v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.6.0.1/32"}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].String() != "10.6.0.1/32" {
		t.Fatalf("next pod got %s", addrs(got))
	}
}
