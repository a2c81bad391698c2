package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/controller/resourceclaims"
	"podnet.io/podnet/test/testenv"
)

// TestIntegrationControllerReleasesUnpreparableClaims: on a real API
// server the controller clears the allocation and reservation of a claim
// holding a podnet.io device whose namespace is not opted in, or that has
// no approval, once its pod waited the grace period without starting, with
// a ClaimReleased Event on the claim; and of an approved claim once its
// namespace stops being opted in. It leaves alone an approved claim of an
// opted-in namespace, a claim whose pod started, and a claim of another
// driver.
func TestIntegrationControllerReleasesUnpreparableClaims(t *testing.T) {
	env := sharedEnv(t)
	c := env.Client
	ctx := context.Background()
	optedIn := map[string]string{v1alpha1.EnabledLabel: "true"}
	off, on, leavingNS := testNamespace(t, c, "off", nil), testNamespace(t, c, "on", optedIn), testNamespace(t, c, "leaving", optedIn)
	// The held claims go when the test ends, its controller stopped: the
	// controllers of later tests on the shared server have none to release.
	t.Cleanup(func() {
		for _, ns := range []string{off, on, leavingNS} {
			if err := c.DeleteAllOf(context.Background(), &resourceapi.ResourceClaim{}, client.InNamespace(ns)); err != nil {
				t.Errorf("delete the ResourceClaims of %s: %v", ns, err)
			}
		}
	})
	approved := map[string]string{v1alpha1.ApprovedAnnotation: "{}", v1alpha1.ApprovedSignatureAnnotation: "x"}
	outside := heldResourceClaim(t, c, off, "outside", v1alpha1.DRADriver, nil, false)
	unapproved := heldResourceClaim(t, c, on, "unapproved", v1alpha1.DRADriver, nil, false)
	granted := heldResourceClaim(t, c, on, "granted", v1alpha1.DRADriver, approved, false)
	started := heldResourceClaim(t, c, off, "started", v1alpha1.DRADriver, nil, true)
	gpu := heldResourceClaim(t, c, off, "gpu", "gpu.example.com", nil, false)
	leaving := heldResourceClaim(t, c, leavingNS, "leaving", v1alpha1.DRADriver, approved, false)
	startController(t, env, time.Second)

	for _, claim := range []*resourceapi.ResourceClaim{outside, unapproved} {
		waitReleased(t, c, claim)
	}
	// The namespace of an approved claim stops being opted in.
	if err := c.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leavingNS}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+v1alpha1.EnabledLabel+`":null}}}`))); err != nil {
		t.Fatal(err)
	}
	waitReleased(t, c, leaving)
	// The others stay held: the controller had time enough to release
	// them.
	for _, claim := range []*resourceapi.ResourceClaim{granted, started, gpu} {
		var got resourceapi.ResourceClaim
		if err := c.Get(ctx, client.ObjectKeyFromObject(claim), &got); err != nil {
			t.Fatal(err)
		}
		if got.Status.Allocation == nil || len(got.Status.ReservedFor) != 1 {
			t.Errorf("claim %s/%s was released: allocation %v, reserved for %v", claim.Namespace, claim.Name, got.Status.Allocation, got.Status.ReservedFor)
		}
	}
}

// waitReleased waits until the claim has no allocation nor reservation and
// a ClaimReleased Event names it.
func waitReleased(t *testing.T, c client.Client, claim *resourceapi.ResourceClaim) {
	t.Helper()
	testenv.Eventually(t, time.Minute, fmt.Sprintf("claim %s/%s released", claim.Namespace, claim.Name), func(ctx context.Context) error {
		var got resourceapi.ResourceClaim
		if err := c.Get(ctx, client.ObjectKeyFromObject(claim), &got); err != nil {
			return err
		}
		if got.Status.Allocation != nil || len(got.Status.ReservedFor) != 0 {
			return fmt.Errorf("allocation %v, reserved for %v", got.Status.Allocation, got.Status.ReservedFor)
		}
		var evs eventsv1.EventList
		if err := c.List(ctx, &evs, client.InNamespace(claim.Namespace)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == resourceclaims.ReasonClaimReleased && e.Regarding.Name == claim.Name && e.Type == corev1.EventTypeWarning {
				return nil
			}
		}
		return fmt.Errorf("no %s Event among %d", resourceclaims.ReasonClaimReleased, len(evs.Items))
	})
}

// heldResourceClaim creates a pod on node-a and a claim in ns with
// annotations, allocated one device of driver on node-a and reserved for
// the pod, as the scheduler leaves it; started marks the pod's container
// as running.
func heldResourceClaim(t *testing.T, c client.Client, ns, name, driver string, annotations map[string]string, started bool) *resourceapi.ResourceClaim {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodPending
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if started {
		pod.Status.Phase = corev1.PodRunning
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Image: "busybox", ImageID: "x", ContainerID: "containerd://c",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
	}
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
			{Name: "net", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "data.p"}}}}}}
	if err := c.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	claim.Status.Allocation = &resourceapi.AllocationResult{
		Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "net", Driver: driver, Pool: "node-a", Device: "d0"}}},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-a"}}}}}},
	}
	claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}}
	if err := c.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	return claim
}
