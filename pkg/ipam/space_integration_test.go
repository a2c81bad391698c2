package ipam_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/pkg/policy"
	"podnet.io/podnet/test/testenv"
)

// approve runs the webhook's policy for one pod of namespace ns asking for
// network and returns the IPAM of the single approved interface, with the
// address space and quota the policy signs into it.
func approve(t *testing.T, ns, network string, profiles []v1alpha1.NetworkProfile) v1alpha1.ApprovedIPAM {
	t.Helper()
	in := policy.Input{
		Namespace: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
			v1alpha1.EnabledLabel: "true", "kubernetes.io/metadata.name": ns, "tier": "tenants"}}},
		Pod:      &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Annotations: map[string]string{v1alpha1.NetworksAnnotation: network}}},
		Profiles: profiles,
	}
	a, errs := policy.Decide(in)
	if len(errs) > 0 {
		t.Fatalf("namespace %s network %s refused: %v", ns, network, errs.ToAggregate())
	}
	return *a.Interfaces[0].IPAM
}

// bridgeProfile offers one bridge network with one pool to the namespaces
// labelled tier=tenants; max is its ipam.maxAddressesPerNamespace (nil:
// absent).
func bridgeProfile(name, network, bridge, pool string, max *int32) v1alpha1.NetworkProfile {
	return v1alpha1.NetworkProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec: v1alpha1.NetworkProfileSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "tenants"}},
			MaxInterfaces:     8,
			Networks: []v1alpha1.Network{{Name: network, Bridge: &v1alpha1.BridgeNetwork{Name: bridge},
				IPAM: &v1alpha1.IPAM{Pools: []string{pool}, MaxAddressesPerNamespace: max}}},
		},
	}
}

func ptr32(v int32) *int32 { return &v }

// fill calls Ensure for new pods of ns on network, at most limit times,
// until one is refused for the quota or the pool is full, and returns how
// many got an address and whether the quota stopped them. Any other error
// fails the test.
func fill(t *testing.T, ctx context.Context, a *ipam.Allocator, c client.Client, ns, network string, spec v1alpha1.ApprovedIPAM, limit int) (int, bool) {
	t.Helper()
	for n := range limit {
		_, err := ensureRetrying(ctx, a, createPod(t, c, ns), network, "net1", spec)
		var over *ipam.QuotaExceededError
		var full *ipam.ExhaustedError
		switch {
		case errors.As(err, &over):
			return n, true
		case errors.As(err, &full):
			return n, false
		case err != nil:
			t.Fatalf("namespace %s network %s, pod %d: %v", ns, network, n+1, err)
		}
	}
	return limit, false
}

// quotaStops fills as fill does and fails the test unless the quota
// stopped namespace ns after exactly want addresses.
func quotaStops(t *testing.T, ctx context.Context, a *ipam.Allocator, c client.Client, ns, network string, spec v1alpha1.ApprovedIPAM, want int) {
	t.Helper()
	n, stopped := fill(t, ctx, a, c, ns, network, spec, want+4)
	if n != want || !stopped {
		t.Fatalf("namespace %s network %s: %d addresses (stopped by the quota: %v), want the quota to stop it after %d", ns, network, n, stopped, want)
	}
}

// TestIntegrationAddressSpaces runs the quota and the address spaces
// against a real API server, with approvals made by the webhook's own
// policy from profiles:
//
//   - a second profile offering a capped pool without a cap (attack: the
//     quota bypassed through the uncapped profile) counts against the same
//     quota: tenant A stops at the cap, tenant B still gets addresses;
//   - two profiles on one bridge with other pools share one quota;
//   - a pool shared by namespaces with no cap gets the default quota (half
//     the pool), so A cannot take all of it, while "unlimited" says
//     otherwise explicitly;
//   - the same CIDR on two bridges: both hand out the same addresses, even
//     the same static one, since they are two address spaces.
func TestIntegrationAddressSpaces(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	c := directClient(t, env)
	a := newAllocator(t, env)
	nsA, nsB := createNamespace(t, c, "space-a"), createNamespace(t, c, "space-b")

	t.Run("SecondProfileCannotBypassTheQuota", func(t *testing.T) {
		profiles := []v1alpha1.NetworkProfile{
			bridgeProfile("capped", "capped-data", "pnbr-q1", "10.61.0.0/29", ptr32(2)), // 6 addresses
			bridgeProfile("open", "open-data", "pnbr-q1", "10.61.0.0/29", nil),
		}
		capped, open := approve(t, nsA, "capped-data", profiles), approve(t, nsA, "open-data", profiles)
		if capped.AddressSpace != open.AddressSpace || open.MaxPerNamespace != 2 {
			t.Fatalf("approvals: capped %+v, open %+v; want one address space and the cap 2 on both", capped, open)
		}
		quotaStops(t, ctx, a, c, nsA, "capped-data", capped, 2)
		// The second, uncapped profile gives A nothing more.
		quotaStops(t, ctx, a, c, nsA, "open-data", open, 0)
		// B still gets its own 2 of the pool A could not drain.
		quotaStops(t, ctx, a, c, nsB, "open-data", approve(t, nsB, "open-data", profiles), 2)
	})

	t.Run("TwoProfilesOnOneBridgeShareOneQuota", func(t *testing.T) {
		profiles := []v1alpha1.NetworkProfile{
			bridgeProfile("left", "left-data", "pnbr-q2", "10.62.0.0/28", ptr32(3)),
			bridgeProfile("right", "right-data", "pnbr-q2", "10.62.1.0/28", ptr32(5)),
		}
		left, right := approve(t, nsA, "left-data", profiles), approve(t, nsA, "right-data", profiles)
		if left.MaxPerNamespace != 3 || right.MaxPerNamespace != 3 {
			t.Fatalf("the strictest cap wins on both: got %d and %d, want 3", left.MaxPerNamespace, right.MaxPerNamespace)
		}
		if n, _ := fill(t, ctx, a, c, nsA, "left-data", left, 1); n != 1 {
			t.Fatal("no address through the first profile")
		}
		// 2 more through the second profile: 3 in all on the bridge.
		quotaStops(t, ctx, a, c, nsA, "right-data", right, 2)
	})

	t.Run("SharedPoolGetsTheDefaultQuota", func(t *testing.T) {
		profiles := []v1alpha1.NetworkProfile{bridgeProfile("plain", "plain-data", "pnbr-q3", "10.63.0.0/29", nil)}
		plain := approve(t, nsA, "plain-data", profiles)
		if plain.MaxPerNamespace != 3 {
			t.Fatalf("default quota of a shared /29 = %d, want 3 (half its 6 addresses)", plain.MaxPerNamespace)
		}
		quotaStops(t, ctx, a, c, nsA, "plain-data", plain, 3)
		quotaStops(t, ctx, a, c, nsB, "plain-data", approve(t, nsB, "plain-data", profiles), 3)
		// Unlimited, said explicitly, is no cap; a profile pinned to one
		// namespace by name is no shared pool either.
		unlimited := bridgeProfile("wide", "wide-data", "pnbr-q4", "10.63.1.0/29", nil)
		unlimited.Spec.Networks[0].IPAM.UnlimitedAddressesPerNamespace = true
		pinned := bridgeProfile("own", "own-data", "pnbr-q5", "10.63.2.0/29", nil)
		pinned.Spec.NamespaceSelector = metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": nsA}}
		for _, p := range []v1alpha1.NetworkProfile{unlimited, pinned} {
			got := approve(t, nsA, p.Spec.Networks[0].Name, []v1alpha1.NetworkProfile{p})
			if got.MaxPerNamespace != 0 {
				t.Errorf("profile %s: quota %d, want none", p.Name, got.MaxPerNamespace)
			}
			if n, stopped := fill(t, ctx, a, c, nsA, p.Spec.Networks[0].Name, got, 7); n != 6 || stopped {
				t.Errorf("profile %s: A got %d of the pool's 6 addresses (stopped by a quota: %v), want all", p.Name, n, stopped)
			}
		}
	})

	t.Run("SameCIDROnTwoBridges", func(t *testing.T) {
		profiles := []v1alpha1.NetworkProfile{
			bridgeProfile("east", "east-data", "pnbr-east", "10.64.0.0/30", nil), // .1 and .2
			bridgeProfile("west", "west-data", "pnbr-west", "10.64.0.0/30", nil),
		}
		east, west := approve(t, nsA, "east-data", profiles), approve(t, nsA, "west-data", profiles)
		east.MaxPerNamespace, west.MaxPerNamespace = 0, 0 // the addresses, not the quota, are under test
		got := map[string][]string{}
		for _, side := range []struct {
			network string
			spec    v1alpha1.ApprovedIPAM
		}{{"east-data", east}, {"west-data", west}, {"east-data", east}, {"west-data", west}} {
			ips, err := ensureRetrying(ctx, a, createPod(t, c, nsA), side.network, "net1", side.spec)
			if err != nil {
				t.Fatalf("%s: %v", side.network, err)
			}
			got[side.network] = append(got[side.network], ips[0].IP.String())
		}
		for _, n := range []string{"east-data", "west-data"} {
			if len(got[n]) != 2 || got[n][0] == got[n][1] {
				t.Fatalf("%s got %v, want both addresses of the pool", n, got[n])
			}
		}
		static := east
		static.Static = []string{"10.64.0.1/30"}
		p := createPod(t, c, nsA)
		if _, err := a.Ensure(ctx, p, "east-data", "net2", static); !errors.As(err, new(*ipam.ConflictError)) {
			t.Fatalf("a third holder of 10.64.0.1 on one bridge: err = %v, want ConflictError", err)
		}
	})
}

// TestIntegrationQuotaOfOneSpaceUnderConcurrency: 6 allocators, as 6
// agents, allocate at once for 36 pods of one namespace through two
// networks (two profiles) with other pools on one bridge, quota 4; a
// watch of every claim event must never see the namespace hold more than
// 4 addresses of the address space at any moment, and exactly 4 are held
// at the end.
func TestIntegrationQuotaOfOneSpaceUnderConcurrency(t *testing.T) {
	env := sharedEnv(t)
	c := directClient(t, env)
	ns := createNamespace(t, c, "race")
	const max = 4
	specs := []struct {
		network string
		spec    v1alpha1.ApprovedIPAM
	}{
		{"race-x", v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.65.0.0/24"}, MaxPerNamespace: max}},
		{"race-y", v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.65.1.0/24"}, MaxPerNamespace: max}},
	}
	peak := watchSpacePeak(t, env, testSpace, ns)
	var wg sync.WaitGroup
	var mu sync.Mutex
	held := 0
	for n := range 6 {
		alloc := newAllocator(t, env)
		wg.Go(func() {
			for k := range 6 {
				s := specs[(n+k)%2]
				o := createPodNamed(t, c, ns, fmt.Sprintf("r%d-%d", n, k))
				o.Node = fmt.Sprintf("node-%d", n)
				_, err := alloc.Ensure(context.Background(), o, s.network, "net1", s.spec)
				var over *ipam.QuotaExceededError
				var full *ipam.ExhaustedError
				switch {
				case err == nil:
					mu.Lock()
					held++
					mu.Unlock()
				case errors.As(err, &over), errors.As(err, &full):
				default:
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if held != max {
		t.Errorf("%d pods hold an address of the space, want %d", held, max)
	}
	if p := peak(); p > max || p != held {
		t.Errorf("the namespace held up to %d addresses of the space at once, cap %d (held at the end: %d)", p, max, held)
	}
	var slots v1alpha1.IPClaimList
	if err := c.List(context.Background(), &slots, client.MatchingLabels{v1alpha1.NamespaceLabel: ns, v1alpha1.AddressSpaceLabel: testSpace}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range slots.Items {
		if s.Spec.Slot != nil {
			n++
			if int(*s.Spec.Slot) >= max {
				t.Errorf("slot %s numbered %d, at or above the cap %d", s.Name, *s.Spec.Slot, max)
			}
		}
	}
	if n != max {
		t.Errorf("%d quota slots held, want %d", n, max)
	}
}

// watchSpacePeak follows every IPClaim event and returns a function giving
// the largest number of address claims (not slots) namespace ns ever held
// at once in address space space.
func watchSpacePeak(t *testing.T, env *testenv.Env, space, ns string) func() int {
	t.Helper()
	var mu sync.Mutex
	live, peak := map[string]bool{}, 0
	watchClaims(t, env, func(typ watch.EventType, c *v1alpha1.IPClaim) {
		if c.Spec.Slot != nil || c.Spec.AddressSpace != space || c.Spec.Pod.Namespace != ns {
			return
		}
		mu.Lock()
		switch typ {
		case watch.Added:
			live[c.Name+"/"+string(c.UID)] = true
		case watch.Deleted:
			delete(live, c.Name+"/"+string(c.UID))
		}
		peak = max(peak, len(live))
		mu.Unlock()
	})
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// TestIntegrationClaimsOfTheFormerSchemeAcrossAnUpgrade is the agent
// upgrade: a running pod holds an address claim named after the address
// alone and a quota slot of its pool, as agents made them before address
// spaces. Its next Ensure keeps both and makes no new address claim (it
// takes a slot of the space, so the address counts against the quota
// now); no other pod gets that address, in its space or another, while
// it is held; a release deletes the former claims like any; afterwards
// the address is free and LookForLegacyClaims finds none.
func TestIntegrationClaimsOfTheFormerSchemeAcrossAnUpgrade(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	c := directClient(t, env)
	a := newAllocator(t, env)
	old := createPod(t, c, createNamespace(t, c, "upgrade"))
	addr := netip.MustParseAddr("10.66.0.1")
	pool := netip.MustParsePrefix("10.66.0.0/30") // .1 and .2
	labels := map[string]string{v1alpha1.PodUIDLabel: old.UID, v1alpha1.NetworkLabel: "data", v1alpha1.NodeLabel: testNode, v1alpha1.NamespaceLabel: old.Namespace}
	ref := v1alpha1.PodReference{Namespace: old.Namespace, Name: old.Name, UID: old.UID}
	slot := int32(0)
	former := []*v1alpha1.IPClaim{
		{ObjectMeta: metav1.ObjectMeta{Name: ipam.FormerClaimName(addr), Labels: labels},
			Spec: v1alpha1.IPClaimSpec{Network: "data", Address: addr.String(), Pool: pool.String(), Interface: "net1", Pod: ref}},
		{ObjectMeta: metav1.ObjectMeta{Name: ipam.FormerSlotName(pool, old.Namespace, 0), Labels: labels},
			Spec: v1alpha1.IPClaimSpec{Network: "data", Slot: &slot, Pool: pool.String(), Interface: "net1", Pod: ref}},
	}
	for _, f := range former {
		if err := c.Create(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := a.LookForLegacyClaims(ctx); err != nil || n != 2 {
		t.Fatalf("LookForLegacyClaims = %d, %v; want the 2 claims of the former scheme", n, err)
	}
	spec := v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{pool.String()}, MaxPerNamespace: 2}

	got, err := a.Ensure(ctx, old, "data", "net1", spec)
	if err != nil || got[0].IP.String() != addr.String() {
		t.Fatalf("the running pod got %s, %v; want its own %s", addrs(got), err, addr)
	}
	names := map[string]bool{}
	for _, h := range claimsOf(t, c, old.UID) {
		names[h.Name] = true
	}
	newSlot := ipam.SlotName(testSpace, pool, old.Namespace, 0)
	newSlot2 := ipam.SlotName(testSpace, pool, old.Namespace, 1)
	if len(names) != 3 || !names[former[0].Name] || !names[former[1].Name] || (!names[newSlot] && !names[newSlot2]) {
		t.Fatalf("the running pod holds %v; want its two former claims and one slot of the space", names)
	}

	// Nobody else gets the held address, in this space or another.
	for _, space := range []string{testSpace, "pnbr-other.bridge"} {
		p := createPod(t, c, "default")
		s := v1alpha1.ApprovedIPAM{AddressSpace: space, Pools: spec.Pools}
		got, err := a.Ensure(ctx, p, "data", "net1", s)
		if err != nil || got[0].IP.String() != "10.66.0.2" {
			t.Fatalf("space %s: a new pod got %s, %v; want 10.66.0.2", space, addrs(got), err)
		}
		s.Static = []string{addr.String() + "/30"}
		_, err = a.Ensure(ctx, createPod(t, c, "default"), "data", "net1", s)
		var conflict *ipam.ConflictError
		if !errors.As(err, &conflict) || conflict.Claim != former[0].Name {
			t.Fatalf("space %s: a pod asking for the held %s: err = %v, want ConflictError naming %s", space, addr, err, former[0].Name)
		}
	}

	if err := a.Release(ctx, old.UID, "", ""); err != nil {
		t.Fatal(err)
	}
	if left := claimsOf(t, c, old.UID); len(left) != 0 {
		t.Fatalf("after release the pod still holds %d claims", len(left))
	}
	got, err = a.Ensure(ctx, createPod(t, c, "default"), "data", "net1", v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: spec.Pools, Static: []string{addr.String() + "/30"}})
	if err != nil || got[0].IP.String() != addr.String() {
		t.Fatalf("after the release the address went to %s, %v; want %s free again", addrs(got), err, addr)
	}
	if n, err := a.LookForLegacyClaims(ctx); err != nil || n != 0 {
		t.Fatalf("LookForLegacyClaims = %d, %v; want 0 once the former claims are gone", n, err)
	}
}
