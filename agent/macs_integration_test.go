package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/pkg/macpool"
	"podnet.io/podnet/test/testenv"
)

// TestIntegrationStaticMACClaimedWithoutARange: against a real API server,
// two tenants' pods ask for one static MAC on a network without a
// macRange. The first holds the MACClaim named after the MAC; the second
// is refused, told that a pod of another namespace holds that claim
// (never which pod); once the first lets it go, the MAC is the second's.
func TestIntegrationStaticMACClaimedWithoutARange(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	c := env.Client
	pods := map[string]*corev1.Pod{}
	for _, ns := range []string{"tenant-a", "tenant-b"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "holder-" + ns},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		pods[ns] = p
	}
	addrs := IPAM{Allocator: ipam.New(c, nil), MACs: macpool.New(c, nil)}
	ai := v1alpha1.ApprovedInterface{Interface: "net1", Network: "plain", MAC: "0a:00:00:00:00:42"}
	const claimName = "0a-00-00-00-00-42"

	for range 2 { // the second time finds the claim the first made
		if mac, err := addrs.EnsureMAC(ctx, pods["tenant-a"], ai); err != nil || mac != ai.MAC {
			t.Fatalf("tenant-a's static MAC: %q, %v", mac, err)
		}
	}
	var claim v1alpha1.MACClaim
	if err := c.Get(ctx, client.ObjectKey{Name: claimName}, &claim); err != nil || claim.Spec.Pod.UID != string(pods["tenant-a"].UID) {
		t.Fatalf("MACClaim %s: %+v (%v), want it held by tenant-a's pod", claimName, claim.Spec.Pod, err)
	}

	r := &Reconciler{MACs: addrs}
	a := &v1alpha1.Approval{Interfaces: []v1alpha1.ApprovedInterface{ai}}
	err := r.ensureMACs(ctx, pods["tenant-b"], a)
	var conflict *macpool.ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("tenant-b asking for tenant-a's MAC: %v, want a ConflictError", err)
	}
	for _, want := range []string{`interface "net1" network "plain"`, "a pod of another namespace", claimName} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "tenant-a") {
		t.Errorf("refusal %q names the other tenant's pod or namespace", err)
	}
	if ipamReason(err) != v1alpha1.ReasonIPAMFailed {
		t.Errorf("reason %s, want %s", ipamReason(err), v1alpha1.ReasonIPAMFailed)
	}

	held := pods["tenant-a"]
	if err := addrs.Release(ctx, podstate.Ref{Namespace: held.Namespace, Name: held.Name, UID: string(held.UID)}, "plain", "net1"); err != nil {
		t.Fatal(err)
	}
	if err := r.ensureMACs(ctx, pods["tenant-b"], a); err != nil {
		t.Fatalf("tenant-b after tenant-a let the MAC go: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: claimName}, &claim); err != nil || claim.Spec.Pod.UID != string(pods["tenant-b"].UID) {
		t.Fatalf("MACClaim %s: %+v (%v), want it held by tenant-b's pod", claimName, claim.Spec.Pod, err)
	}
}
