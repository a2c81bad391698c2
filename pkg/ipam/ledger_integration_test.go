package ipam_test

import (
	"context"
	"errors"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam"
)

// TestIntegrationRolledBackClaimStaysGone: a claim that an Ensure created
// and then deleted again (a later address of the same interface was held
// by another pod) is never counted as the interface's own afterwards,
// however long after: once the allocator's memory of the delete has aged
// out, the next Ensure claims the address anew rather than return an
// address no claim holds.
func TestIntegrationRolledBackClaimStaysGone(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	c := directClient(t, env)
	clk := testingclock.NewFakePassiveClock(time.Now())
	a := ipam.New(c, startCache(t, env)).WithClock(clk)
	pools := []string{"10.8.0.0/29", "fd00:8::/64"}

	other := createPod(t, c, "default")
	if _, err := a.Ensure(ctx, other, "roll", "net1", v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: pools, Static: []string{"fd00:8::3/64"}}); err != nil {
		t.Fatal(err)
	}
	p := createPod(t, c, "default")
	_, err := a.Ensure(ctx, p, "roll", "net1", v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: pools, Static: []string{"10.8.0.2/29", "fd00:8::3/64"}})
	var conflict *ipam.ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("err = %v, want ConflictError for fd00:8::3", err)
	}
	if left := claimsOf(t, c, p.UID); len(left) != 0 {
		t.Fatalf("after the conflict the pod holds %d claims, want its 10.8.0.2 rolled back", len(left))
	}

	// Time passes; the allocator's next delete forgets the old ones.
	clk.SetTime(clk.Now().Add(3 * time.Minute))
	if err := a.Release(ctx, other.UID, "", ""); err != nil {
		t.Fatal(err)
	}
	out, err := a.Ensure(ctx, p, "roll", "net1", v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: pools[:1], Static: []string{"10.8.0.2/29"}})
	if err != nil {
		t.Fatal(err)
	}
	held := claimsOf(t, c, p.UID)
	if len(out) != 1 || out[0].IP.String() != "10.8.0.2" || len(held) != 1 || held[0].Spec.Address != "10.8.0.2" {
		t.Fatalf("Ensure gave %s with claims %+v in the API server, want 10.8.0.2 held by a claim", addrs(out), held)
	}
}
