package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/pkg/macpool"
	"podnet.io/podnet/test/testenv"
)

// TestIntegrationControllerFreesMACClaimsOfGonePods: the MAC and the quota
// slot an allocator claimed for a pod are deleted by the controller once
// the pod is gone, and so is a claim naming an earlier pod of a live pod's
// name (another UID); the live pod's claims stay.
func TestIntegrationControllerFreesMACClaimsOfGonePods(t *testing.T) {
	env := sharedEnv(t)
	c := env.Client
	ctx := context.Background()
	ns := testNamespace(t, c, "mac-gc", nil)
	startController(t, env, time.Second)

	r := v1alpha1.ApprovedMACRange{Start: "02:00:00:00:07:00", End: "02:00:00:00:07:0f", MaxPerNamespace: 4}
	alloc := macpool.New(c, nil)
	owner := func(name string) ipam.Owner {
		p := createPod(t, c, ns, name)
		return ipam.Owner{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), Node: "node-a"}
	}
	live, doomed := owner("mac-live"), owner("mac-doomed")
	// The stale claim first: the allocator, picking MACs at random, must
	// find its MAC taken rather than the test find its name taken.
	stale := &v1alpha1.MACClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "02-00-00-00-07-0e", Labels: map[string]string{v1alpha1.NodeLabel: "node-a"}},
		Spec: v1alpha1.MACClaimSpec{Network: "data", MAC: "02:00:00:00:07:0e", Interface: "net1",
			Pod: v1alpha1.PodReference{Namespace: ns, Name: "mac-live", UID: "earlier-uid"}},
	}
	if err := c.Create(ctx, stale); err != nil {
		t.Fatal(err)
	}
	for _, o := range []ipam.Owner{live, doomed} {
		if _, err := alloc.Ensure(ctx, o, "data", "net1", "", r); err != nil {
			t.Fatal(err)
		}
	}
	claimsOf := func(uid string) ([]v1alpha1.MACClaim, error) {
		var list v1alpha1.MACClaimList
		err := c.List(ctx, &list, client.MatchingLabels{v1alpha1.PodUIDLabel: uid})
		return list.Items, err
	}
	if held, err := claimsOf(doomed.UID); err != nil || len(held) != 2 {
		t.Fatalf("the doomed pod holds %d claims (%v), want its MAC and its slot", len(held), err)
	}
	if err := c.Delete(ctx, podOf(doomed), client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "MAC claims of gone pods deleted", func(context.Context) error {
		held, err := claimsOf(doomed.UID)
		if err != nil || len(held) > 0 {
			return fmt.Errorf("the deleted pod still holds %d MAC claims (%v)", len(held), err)
		}
		// By UID: once the stale claim is gone its MAC may be claimed anew.
		var got v1alpha1.MACClaim
		if err := c.Get(ctx, client.ObjectKeyFromObject(stale), &got); err == nil && got.UID == stale.UID || err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("the claim of an earlier pod of the same name is still there (%v)", err)
		}
		return nil
	})
	if held, err := claimsOf(live.UID); err != nil || len(held) != 2 {
		t.Fatalf("the live pod holds %d claims (%v), want 2", len(held), err)
	}
}

func podOf(o ipam.Owner) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name}}
}
