package ipam_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/test/testenv"
)

// peakWatcher follows every IPClaim event of the API server, in the order
// etcd committed them, and records per namespace the largest number of
// address claims (not quota slots) of one pool that ever existed at once.
// A watch delivers every change of every object in order, so this is the
// peak over the whole history, not a sample.
type peakWatcher struct {
	mu   sync.Mutex
	live map[string]map[string]bool // namespace -> claim name
	peak map[string]int
}

func watchPeaks(t *testing.T, env *testenv.Env, pool netip.Prefix) *peakWatcher {
	t.Helper()
	p := &peakWatcher{live: map[string]map[string]bool{}, peak: map[string]int{}}
	watchClaims(t, env, func(typ watch.EventType, c *v1alpha1.IPClaim) {
		if c.Spec.Slot != nil {
			return
		}
		if a, err := netip.ParseAddr(c.Spec.Address); err != nil || !pool.Contains(a) {
			return
		}
		p.mu.Lock()
		ns := c.Spec.Pod.Namespace
		if p.live[ns] == nil {
			p.live[ns] = map[string]bool{}
		}
		switch typ {
		case watch.Added:
			p.live[ns][c.Name+"/"+string(c.UID)] = true
		case watch.Deleted:
			delete(p.live[ns], c.Name+"/"+string(c.UID))
		}
		p.peak[ns] = max(p.peak[ns], len(p.live[ns]))
		p.mu.Unlock()
	})
	return p
}

func (p *peakWatcher) peakOf(ns string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak[ns]
}

// TestIntegrationQuotaUnderConcurrency runs 8 allocators, each with its own
// client and cache as 8 agents would, that together try 48 pods of each of
// two namespaces at once on one shared pool with a cap of 5 addresses per
// namespace; then two pods of each namespace release and all refused pods
// try again at once, and then a third round. Each namespace must hold
// exactly 5 addresses after each round, every refusal must be a
// QuotaExceededError naming the cap, no address may be handed out twice,
// and a watch of every claim event must never see a namespace hold more
// than 5 addresses of the pool at any moment.
func TestIntegrationQuotaUnderConcurrency(t *testing.T) {
	env := sharedEnv(t)
	const (
		allocators = 8
		perEach    = 6
		maxPerNS   = 5
		network    = "shared"
	)
	pool := netip.MustParsePrefix("10.40.0.0/24")
	approval := v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{pool.String()}, MaxPerNamespace: maxPerNS}
	c := directClient(t, env)
	namespaces := []string{createNamespace(t, c, "tenant-a"), createNamespace(t, c, "tenant-b")}
	peaks := watchPeaks(t, env, pool)

	allocs := make([]*ipam.Allocator, allocators)
	pods := make([][]ipam.Owner, allocators)
	for n := range allocators {
		allocs[n] = newAllocator(t, env)
		for k := range perEach {
			o := createPodNamed(t, c, namespaces[k%2], fmt.Sprintf("q%d-%d", n, k))
			o.Node = fmt.Sprintf("node-%d", n)
			pods[n] = append(pods[n], o)
		}
	}

	holders := map[string]ipam.Owner{} // address -> pod
	held := map[string]bool{}          // pod UID -> holds an address
	var mu sync.Mutex
	round := func(name string) {
		var wg sync.WaitGroup
		for n := range allocators {
			wg.Go(func() {
				for _, o := range pods[n] {
					mu.Lock()
					skip := held[o.UID]
					mu.Unlock()
					if skip {
						continue
					}
					got, err := allocs[n].Ensure(context.Background(), o, network, "net1", approval)
					var over *ipam.QuotaExceededError
					switch {
					case errors.As(err, &over):
						if over.Max != maxPerNS || over.Namespace != o.Namespace {
							t.Errorf("%s: %s refused with %+v", name, o, over)
						}
					case err != nil:
						t.Errorf("%s: %s: %v", name, o, err)
					default:
						mu.Lock()
						ip := got[0].IP.String()
						if prev, dup := holders[ip]; dup {
							t.Errorf("%s: address %s handed to both %s and %s", name, ip, prev, o)
						}
						holders[ip], held[o.UID] = o, true
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		for _, ns := range namespaces {
			if n := countHolders(held, pods, ns); n != maxPerNS {
				t.Errorf("%s: namespace %s holds %d addresses, want exactly %d", name, ns, n, maxPerNS)
			}
			addrClaims, slots := claimsInNamespace(t, c, ns)
			if addrClaims != maxPerNS || slots != maxPerNS {
				t.Errorf("%s: namespace %s has %d address claims and %d quota slots in the API server, want %d of each", name, ns, addrClaims, slots, maxPerNS)
			}
		}
	}

	round("first round")
	for r := range 2 {
		// Two pods of each namespace give their address back.
		for _, ns := range namespaces {
			freed := 0
			for n := range allocators {
				for _, o := range pods[n] {
					if freed < 2 && o.Namespace == ns && held[o.UID] {
						if err := allocs[n].Release(context.Background(), o.UID, network, "net1"); err != nil {
							t.Fatal(err)
						}
						delete(held, o.UID)
						for ip, h := range holders {
							if h.UID == o.UID {
								delete(holders, ip)
							}
						}
						freed++
					}
				}
			}
		}
		round(fmt.Sprintf("round %d after releases", r+2))
	}
	for _, ns := range namespaces {
		if p := peaks.peakOf(ns); p > maxPerNS || p == 0 {
			t.Errorf("namespace %s held up to %d addresses of the pool at once, cap %d", ns, p, maxPerNS)
		}
		t.Logf("namespace %s: peak %d addresses at once (cap %d) over 3 rounds of %d concurrent attempts", ns, peaks.peakOf(ns), maxPerNS, allocators*perEach/2)
	}
}

// countHolders counts the pods of ns that hold an address.
func countHolders(held map[string]bool, pods [][]ipam.Owner, ns string) int {
	n := 0
	for _, ps := range pods {
		for _, o := range ps {
			if o.Namespace == ns && held[o.UID] {
				n++
			}
		}
	}
	return n
}

// claimsInNamespace counts the address claims and quota slots whose pod is
// in ns, straight from the API server.
func claimsInNamespace(t testing.TB, c client.Client, ns string) (addrs, slots int) {
	t.Helper()
	var list v1alpha1.IPClaimList
	if err := c.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	for _, cl := range list.Items {
		if cl.Spec.Pod.Namespace != ns {
			continue
		}
		if cl.Spec.Slot != nil {
			slots++
		} else {
			addrs++
		}
	}
	return addrs, slots
}

// TestIntegrationQuotaSlotOfDeadPodIsTakenOver: a pod deleted while no
// agent runs leaves its address and its quota slot behind; the next pod of
// its namespace on the same node takes the slot over at once instead of
// waiting for podnet-controller.
func TestIntegrationQuotaSlotOfDeadPodIsTakenOver(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	c := directClient(t, env)
	ns := createNamespace(t, c, "tenant-d")
	approval := v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.41.0.0/24"}, MaxPerNamespace: 1}
	a := newAllocator(t, env)

	first := createPod(t, c, ns)
	if _, err := a.Ensure(ctx, first, "solo", "net1", approval); err != nil {
		t.Fatal(err)
	}
	second := createPod(t, c, ns)
	_, err := a.Ensure(ctx, second, "solo", "net1", approval)
	var over *ipam.QuotaExceededError
	if !errors.As(err, &over) {
		t.Fatalf("second pod under a cap of 1: err = %v, want QuotaExceededError", err)
	}
	want := fmt.Sprintf(`network "solo" interface "net1" of pod %s: namespace %q already holds 1 IPv4 addresses in address space %s (network "solo", pool 10.41.0.0/24), its quota there (the strictest ipam.maxAddressesPerNamespace of the profiles on it); the pod waits until one is freed`, second, ns, testSpace)
	if err.Error() != want {
		t.Fatalf("message:\n got %s\nwant %s", err, want)
	}
	if left := claimsOf(t, c, second.UID); len(left) != 0 {
		t.Fatalf("a refused pod holds %d claims", len(left))
	}
	deletePod(t, c, first)
	got, err := a.Ensure(ctx, second, "solo", "net1", approval)
	if err != nil {
		t.Fatalf("after the holder died: %v", err)
	}
	addrClaims, slots := claimsInNamespace(t, c, ns)
	t.Logf("second pod got %s; namespace holds %d address claims (the dead pod's waits for the controller) and %d slot", addrs(got), addrClaims, slots)
	if slots != 1 {
		t.Fatalf("namespace holds %d quota slots, want 1", slots)
	}
	// Without a cap, no slot is taken.
	third := createPod(t, c, ns)
	if _, err := a.Ensure(ctx, third, "solo", "net2", v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.41.0.0/24"}}); err != nil {
		t.Fatal(err)
	}
	for _, cl := range claimsOf(t, c, third.UID) {
		if cl.Spec.Slot != nil {
			t.Fatalf("uncapped allocation took slot %s", cl.Name)
		}
	}
	// Release frees the slot with the address.
	if err := a.Release(ctx, second.UID, "", ""); err != nil {
		t.Fatal(err)
	}
	if left := claimsOf(t, c, second.UID); len(left) != 0 {
		t.Fatalf("after release the pod holds %d claims", len(left))
	}
}

// TestIntegrationOverlappingPoolsNeverShareAnAddress: two networks (as two
// profiles may name them, alike or not) whose pools overlap fill the
// overlap from both sides; no address is ever held twice, because a claim
// is named after the address alone. Two networks with disjoint pools never
// touch each other's claims.
func TestIntegrationOverlappingPoolsNeverShareAnAddress(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	c := directClient(t, env)
	a, b := newAllocator(t, env), newAllocator(t, env)
	narrow := v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.42.0.0/29"}} // .1-.6
	wide := v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.42.0.0/28"}}   // .1-.14

	seen := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			alloc, network, spec := a, "data", narrow
			if i%2 == 1 {
				alloc, network, spec = b, "data-wide", wide
			}
			o := createPod(t, c, "default")
			got, err := ensureRetrying(ctx, alloc, o, network, "net1", spec)
			var full *ipam.ExhaustedError
			if errors.As(err, &full) {
				return // the narrow pool may fill up: refused, never shared
			}
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			ip := got[0].IP.String()
			if prev, dup := seen[ip]; dup {
				t.Errorf("address %s held through %s and %s", ip, prev, network)
			}
			seen[ip] = network
		})
	}
	wg.Wait()
	if !t.Failed() {
		t.Logf("%d addresses handed out across the overlapping pools, none twice", len(seen))
	}

	// Disjoint pools of one network name (two profiles' "data"): the same
	// host part in each, never in each other's way.
	p1, p2 := createPod(t, c, "default"), createPod(t, c, "default")
	x, err := a.Ensure(ctx, p1, "same", "net1", v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.43.0.0/30"}})
	if err != nil {
		t.Fatal(err)
	}
	y, err := b.Ensure(ctx, p2, "same", "net1", v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.44.0.0/30"}})
	if err != nil {
		t.Fatal(err)
	}
	if !netip.MustParsePrefix("10.43.0.0/30").Contains(netip.MustParseAddr(x[0].IP.String())) ||
		!netip.MustParsePrefix("10.44.0.0/30").Contains(netip.MustParseAddr(y[0].IP.String())) {
		t.Fatalf("disjoint pools: got %s and %s", addrs(x), addrs(y))
	}
}

// TestIntegrationLegacyClaimKeepsItsAddress is the upgrade: a claim named
// "<network>.<address>", as podnet made them before claims were keyed by
// the address alone, keeps its address. Its pod's next Ensure returns that
// address and makes no new claim; other pods never get it, through the
// same network or another; once released, the address is free again.
func TestIntegrationLegacyClaimKeepsItsAddress(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	c := directClient(t, env)
	a := newAllocator(t, env)
	old := createPod(t, c, "default")
	addr := netip.MustParseAddr("10.45.0.1")
	legacy := &v1alpha1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:   ipam.LegacyClaimName("data", addr),
			Labels: map[string]string{v1alpha1.PodUIDLabel: old.UID, v1alpha1.NetworkLabel: "data", v1alpha1.NodeLabel: testNode},
		},
		Spec: v1alpha1.IPClaimSpec{Network: "data", Address: addr.String(), Interface: "net1",
			Pod: v1alpha1.PodReference{Namespace: old.Namespace, Name: old.Name, UID: old.UID}},
	}
	if err := c.Create(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	tiny := v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.45.0.0/30"}} // .1 and .2
	// An agent starting now finds the legacy claim and keeps checking.
	if n, err := a.LookForLegacyClaims(ctx); err != nil || n != 1 {
		t.Fatalf("LookForLegacyClaims = %d, %v; want the 1 legacy claim", n, err)
	}

	got, err := a.Ensure(ctx, old, "data", "net1", tiny)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].IP.String() != addr.String() {
		t.Fatalf("the pod of the legacy claim got %s, want %s", addrs(got), addr)
	}
	if held := claimsOf(t, c, old.UID); len(held) != 1 || held[0].Name != legacy.Name {
		t.Fatalf("the pod of the legacy claim holds %d claims, want only %s", len(held), legacy.Name)
	}

	second := createPod(t, c, "default")
	got, err = a.Ensure(ctx, second, "data", "net1", tiny)
	if err != nil || got[0].IP.String() != "10.45.0.2" {
		t.Fatalf("second pod got %s, %v; want 10.45.0.2", addrs(got), err)
	}
	third := createPod(t, c, "default")
	_, err = a.Ensure(ctx, third, "data", "net1", tiny)
	var full *ipam.ExhaustedError
	if !errors.As(err, &full) {
		t.Fatalf("third pod: err = %v, want ExhaustedError (10.45.0.1 is held by the legacy claim)", err)
	}
	_, err = a.Ensure(ctx, third, "data", "net1", v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: tiny.Pools, Static: []string{"10.45.0.1/30"}})
	var conflict *ipam.ConflictError
	if !errors.As(err, &conflict) || conflict.Claim != legacy.Name {
		t.Fatalf("third pod asking for the legacy address: err = %v, want ConflictError naming %s", err, legacy.Name)
	}
	if n := len(claimsOf(t, c, third.UID)); n != 0 {
		t.Fatalf("the refused pod holds %d claims", n)
	}

	if err := a.Release(ctx, old.UID, "", ""); err != nil {
		t.Fatal(err)
	}
	got, err = a.Ensure(ctx, third, "data", "net1", tiny)
	if err != nil || got[0].IP.String() != addr.String() {
		t.Fatalf("after the legacy claim was released the third pod got %s, %v; want %s", addrs(got), err, addr)
	}
	// The new claims all carry the namespace label: none is taken for a
	// legacy one, and an agent starting now stops checking. The list reads
	// the API server's watch cache (resourceVersion 0), which sees the
	// delete a moment later, so this waits for the cache, not for podnet.
	var n int
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err = a.LookForLegacyClaims(ctx)
		return err == nil && n == 0, err
	})
	if err != nil {
		t.Fatalf("LookForLegacyClaims = %d, %v; want 0 once the legacy claim is gone", n, err)
	}
}
