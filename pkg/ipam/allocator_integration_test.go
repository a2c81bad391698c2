package ipam_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam"
)

// TestIntegrationConcurrentAllocatorsNoDuplicates runs 20 allocators, each
// with its own client and informer cache as 20 agents would, doing 120
// allocations each on one /21 (1,800 left held of 2,045 free: 88 % full),
// with churn: every fourth allocation the
// allocator releases one of its earlier pods, so addresses are freed and
// taken again while others allocate. Both the claims in the API server and
// the addresses handed out must be free of duplicates and agree.
func TestIntegrationConcurrentAllocatorsNoDuplicates(t *testing.T) {
	env := sharedEnv(t)
	const (
		allocators = 20
		perEach    = 120
		network    = "data"
	)
	pool := netip.MustParsePrefix("10.20.0.0/21")
	approval := v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{pool.String()}, Gateways: []string{"10.20.0.1"}}

	type result struct {
		owner ipam.Owner
		addr  net.IPNet
	}
	live := make([][]result, allocators)
	released := make([][]ipam.Owner, allocators)
	var wg sync.WaitGroup
	errs := make(chan error, allocators)
	ns := createNamespace(t, directClient(t, env), "concurrent")
	for n := range allocators {
		a := newAllocator(t, env)
		pods := directClient(t, env)
		wg.Go(func() {
			ctx := context.Background()
			var mine []result
			for k := range perEach {
				// The pods exist: an allocation whose probes all meet held
				// addresses checks their holders, and takes over the
				// address of one whose pod is gone.
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("a%d-p%d", n, k)},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
				}
				if err := pods.Create(ctx, pod); err != nil {
					errs <- fmt.Errorf("allocator %d pod %d: %w", n, k, err)
					return
				}
				o := ipam.Owner{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), Node: fmt.Sprintf("node-%d", n)}
				got, err := ensureRetrying(ctx, a, o, network, "net1", approval)
				if err != nil {
					errs <- fmt.Errorf("allocator %d pod %d: %w", n, k, err)
					return
				}
				if len(got) != 1 {
					errs <- fmt.Errorf("allocator %d pod %d: got %v", n, k, got)
					return
				}
				mine = append(mine, result{o, got[0]})
				if k%4 == 3 {
					gone := mine[len(mine)-3]
					mine = append(mine[:len(mine)-3], mine[len(mine)-2:]...)
					if err := a.Release(ctx, gone.owner.UID, network, "net1"); err != nil {
						errs <- fmt.Errorf("allocator %d release: %w", n, err)
						return
					}
					released[n] = append(released[n], gone.owner)
				}
			}
			live[n] = mine
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	c := env.Client
	claims := allClaims(t, c, network)
	byAddr := map[string]v1alpha1.IPClaim{}
	byPod := map[string]int{}
	for _, cl := range claims {
		byPod[cl.Spec.Pod.UID]++
		a := netip.MustParseAddr(cl.Spec.Address)
		// The name is the reservation: only a name derived from the address
		// lets the API server refuse a second claim of it.
		if want := ipam.ClaimName(testSpace, a); cl.Name != want {
			t.Errorf("claim %s holds %s but is not named %s", cl.Name, a, want)
		}
		byAddr[cl.Spec.Address] = cl
		if !pool.Contains(a) || a == pool.Addr() || a.String() == "10.20.7.255" || a.String() == "10.20.0.1" {
			t.Errorf("claim %s holds a forbidden address %s", cl.Name, a)
		}
	}
	handed := map[string]ipam.Owner{}
	total := 0
	for n := range allocators {
		for _, r := range live[n] {
			total++
			ip := r.addr.IP.String()
			if prev, dup := handed[ip]; dup {
				t.Errorf("address %s handed to both %s and %s", ip, prev, r.owner)
			}
			handed[ip] = r.owner
			if ones, _ := r.addr.Mask.Size(); ones != pool.Bits() {
				t.Errorf("%s got prefix length %d, want %d", r.owner, ones, pool.Bits())
			}
			cl, ok := byAddr[ip]
			if !ok || cl.Spec.Pod.UID != r.owner.UID {
				t.Errorf("%s got %s but the API server's claim of it is %+v", r.owner, ip, cl.Spec.Pod)
			}
		}
		for _, o := range released[n] {
			if left := byPod[o.UID]; left != 0 {
				t.Errorf("released pod %s still holds %d claims", o, left)
			}
		}
	}
	if len(claims) != total {
		t.Errorf("API server holds %d claims, %d pods hold addresses", len(claims), total)
	}
	nReleased := 0
	for n := range allocators {
		nReleased += len(released[n])
	}
	t.Logf("%d allocations, %d releases, %d claims held, 0 duplicates", allocators*perEach, nReleased, len(claims))
}

// laggingReader stands for an informer cache that has not seen anything yet
// (an agent restarted a moment ago): it knows no claims at all.
type laggingReader struct{}

func (laggingReader) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(v1alpha1.GroupVersion.WithResource("ipclaims").GroupResource(), key.Name)
}

func (laggingReader) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// TestIntegrationRetryReusesClaim covers a crash between claiming and
// using: the retry, by a restarted allocator, even one whose cache knows
// nothing yet, finds the claim and returns the same address; one claim per
// pool per interface remains. It also covers a crash halfway through a
// dual-stack interface, changed static addresses, and Release.
func TestIntegrationRetryReusesClaim(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	c := directClient(t, env)
	pod := createPod(t, c, "default")
	v4 := v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.30.0.0/24"}}
	dual := v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.30.0.0/24", "fd00:30::/64"}}

	first, err := ipam.New(c, c).Ensure(ctx, pod, "retry", "net1", v4)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []client.Reader{c, laggingReader{}, startCache(t, env)} {
		again, err := ipam.New(c, r).Ensure(ctx, pod, "retry", "net1", v4)
		if err != nil {
			t.Fatalf("retry with %T: %v", r, err)
		}
		if addrs(again) != addrs(first) {
			t.Fatalf("retry with %T gave %s, first call %s", r, addrs(again), addrs(first))
		}
	}
	if n := len(claimsOf(t, c, pod.UID)); n != 1 {
		t.Fatalf("after retries the pod holds %d claims, want 1", n)
	}

	// A crash after the IPv4 claim of a dual-stack interface: the retry
	// keeps the IPv4 address and adds IPv6.
	both, err := ipam.New(c, laggingReader{}).Ensure(ctx, pod, "retry", "net1", dual)
	if err != nil {
		t.Fatal(err)
	}
	if len(both) != 2 || both[0].String() != first[0].String() || both[1].IP.To4() != nil {
		t.Fatalf("dual stack after v4 = %s, want %s plus an IPv6 address", addrs(both), addrs(first))
	}
	if n := len(claimsOf(t, c, pod.UID)); n != 2 {
		t.Fatalf("dual stack: the pod holds %d claims, want 2", n)
	}

	// A static address replaces the IPv4 pool address; the old claim goes.
	static := dual
	static.Static = []string{"10.30.0.77/24"}
	got, err := ipam.New(c, c).Ensure(ctx, pod, "retry", "net1", static)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].String() != "10.30.0.77/24" || got[1].String() != both[1].String() {
		t.Fatalf("with static: %s", addrs(got))
	}
	var held []string
	for _, cl := range claimsOf(t, c, pod.UID) {
		held = append(held, cl.Spec.Address)
	}
	if strings.Join(held, ",") != "10.30.0.77,"+both[1].IP.String() && strings.Join(held, ",") != both[1].IP.String()+",10.30.0.77" {
		t.Fatalf("claims after static change: %v", held)
	}

	// Release one interface, then everything.
	if _, err := ipam.New(c, c).Ensure(ctx, pod, "retry", "net2", v4); err != nil {
		t.Fatal(err)
	}
	a := ipam.New(c, c)
	if err := a.Release(ctx, pod.UID, "retry", "net1"); err != nil {
		t.Fatal(err)
	}
	left := claimsOf(t, c, pod.UID)
	if len(left) != 1 || left[0].Spec.Interface != "net2" {
		t.Fatalf("after releasing net1: %+v", left)
	}
	if err := a.Release(ctx, pod.UID, "", ""); err != nil {
		t.Fatal(err)
	}
	if left := claimsOf(t, c, pod.UID); len(left) != 0 {
		t.Fatalf("after releasing all: %d claims", len(left))
	}
	// Releasing what is gone is not an error.
	if err := a.Release(ctx, pod.UID, "", ""); err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationExhaustionAndConflict checks the errors a tenant sees.
func TestIntegrationExhaustionAndConflict(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	c := directClient(t, env)
	a := ipam.New(c, startCache(t, env))
	small := v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.9.0.0/29"}, Gateways: []string{"10.9.0.1"}}

	// A /29 has .1 to .6; .1 is the gateway: five addresses.
	var pods []ipam.Owner
	got := map[string]bool{}
	for range 5 {
		p := createPod(t, c, "default")
		pods = append(pods, p)
		out, err := a.Ensure(ctx, p, "small", "net1", small)
		if err != nil {
			t.Fatal(err)
		}
		got[out[0].String()] = true
	}
	for _, want := range []string{"10.9.0.2/29", "10.9.0.3/29", "10.9.0.4/29", "10.9.0.5/29", "10.9.0.6/29"} {
		if !got[want] {
			t.Fatalf("the five pods got %v; %s missing", got, want)
		}
	}

	sixth := createPod(t, c, "default")
	_, err := a.Ensure(ctx, sixth, "small", "net1", small)
	var exhausted *ipam.ExhaustedError
	if !errors.As(err, &exhausted) || exhausted.Pool != "10.9.0.0/29" {
		t.Fatalf("sixth pod: err = %v, want ExhaustedError for 10.9.0.0/29", err)
	}
	want := fmt.Sprintf(`network "small" interface "net1" of pod %s: pool 10.9.0.0/29 of network "small" is exhausted: every usable address is claimed`, sixth)
	if err.Error() != want {
		t.Fatalf("message:\n got %s\nwant %s", err, want)
	}

	// Dual stack with the IPv4 pool exhausted: the IPv6 claim made first
	// is released again, nothing is left half-allocated.
	out, err := a.Ensure(ctx, sixth, "small", "net1", v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"fd00:9::/64", "10.9.0.0/29"}, Gateways: small.Gateways})
	if !errors.As(err, &exhausted) {
		var held []string
		for _, cl := range allClaims(t, c, "small") {
			held = append(held, cl.Spec.Address+"@"+cl.Spec.Pod.Name)
		}
		t.Fatalf("dual stack: got %s, err = %v, want ExhaustedError; claims: %v", addrs(out), err, held)
	}
	if left := claimsOf(t, c, sixth.UID); len(left) != 0 {
		t.Fatalf("after a failed dual-stack allocation the pod holds %d claims", len(left))
	}

	// A static address held by another running pod.
	held := claimsOf(t, c, pods[0].UID)[0].Spec.Address
	_, err = a.Ensure(ctx, sixth, "small", "net1", v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.9.0.0/29"}, Static: []string{held + "/29"}})
	var conflict *ipam.ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("static conflict: err = %v, want ConflictError", err)
	}
	want = fmt.Sprintf(`network "small" interface "net1" of pod %s: address %s of network "small" is already claimed by another pod or interface (IPClaim "%s")`,
		sixth, held, ipam.ClaimName(testSpace, netip.MustParseAddr(held)))
	if err.Error() != want {
		t.Fatalf("message:\n got %s\nwant %s", err, want)
	}
	// The same pod asking for its own address on another interface.
	_, err = a.Ensure(ctx, pods[0], "small", "net2", v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.9.0.0/29"}, Static: []string{held + "/29"}})
	if !errors.As(err, &conflict) {
		t.Fatalf("same pod, other interface: err = %v, want ConflictError", err)
	}
	if n := len(claimsOf(t, c, sixth.UID)); n != 0 {
		t.Fatalf("after conflicts the sixth pod holds %d claims", n)
	}

	// Bad input names the field.
	_, err = a.Ensure(ctx, sixth, "small", "net1", v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.9.0.0/29"}, Static: []string{"10.9.0.7/29"}})
	if err == nil || !strings.Contains(err.Error(), `ipam.static[0] "10.9.0.7/29": is the broadcast address of pool 10.9.0.0/29`) {
		t.Fatalf("broadcast static: %v", err)
	}
	_, err = a.Ensure(ctx, ipam.Owner{Namespace: "default", Name: "x", UID: "u", Node: testNode}, "Bad_Net", "net1", small)
	if err == nil || !strings.Contains(err.Error(), `network "Bad_Net": must be a DNS label`) {
		t.Fatalf("bad network: %v", err)
	}
}

// TestIntegrationDeadPodAddressesAreReclaimed: a pod deleted while no agent
// runs (nobody calls Release) frees its address for the next pod the moment
// the Pod object is gone, and so does a pod that finished.
func TestIntegrationDeadPodAddressesAreReclaimed(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	c := directClient(t, env)
	a := ipam.New(c, startCache(t, env))
	tiny := v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.8.2.0/30"}} // .1 and .2

	podA, podB := createPod(t, c, "default"), createPod(t, c, "default")
	addrA, err := a.Ensure(ctx, podA, "tiny", "net1", tiny)
	if err != nil {
		t.Fatal(err)
	}
	addrB, err := a.Ensure(ctx, podB, "tiny", "net1", tiny)
	if err != nil {
		t.Fatal(err)
	}
	podC := createPod(t, c, "default")
	if _, err := a.Ensure(ctx, podC, "tiny", "net1", tiny); err == nil {
		t.Fatal("third pod got an address from a full /30")
	}

	deletePod(t, c, podA)
	gotC, err := a.Ensure(ctx, podC, "tiny", "net1", tiny)
	if err != nil {
		t.Fatalf("after pod A was deleted: %v", err)
	}
	if addrs(gotC) != addrs(addrA) {
		t.Fatalf("pod C got %s, want pod A's freed %s", addrs(gotC), addrs(addrA))
	}

	// Pod B finishes (phase Succeeded): its address is free as well.
	var b corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: podB.Namespace, Name: podB.Name}, &b); err != nil {
		t.Fatal(err)
	}
	b.Status.Phase = corev1.PodSucceeded
	if err := c.Status().Update(ctx, &b); err != nil {
		t.Fatal(err)
	}
	podD := createPod(t, c, "default")
	gotD, err := a.Ensure(ctx, podD, "tiny", "net1", tiny)
	if err != nil {
		t.Fatalf("after pod B finished: %v", err)
	}
	if addrs(gotD) != addrs(addrB) {
		t.Fatalf("pod D got %s, want pod B's freed %s", addrs(gotD), addrs(addrB))
	}

	// A dead holder on another node is left to podnet-controller: an
	// agent may change only its own node's claims.
	elsewhere := createPod(t, c, "default")
	elsewhere.Node = "other-node"
	if _, err := a.Ensure(ctx, elsewhere, "single", "net1", v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.8.1.1/32"}}); err != nil {
		t.Fatal(err)
	}
	deletePod(t, c, elsewhere)
	podE := createPod(t, c, "default")
	_, err = a.Ensure(ctx, podE, "single", "net1", v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.8.1.1/32"}})
	var exhausted *ipam.ExhaustedError
	if !errors.As(err, &exhausted) {
		t.Fatalf("pod E took over another node's dead claim: err = %v, want ExhaustedError", err)
	}
}
