//go:build bench

package ipam_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/test/bench"
	"podnet.io/podnet/test/testenv"
)

// whereaboutsAllocsPerSecond is whereabouts' published figure: 500 pods in
// 4 min 34 s.
const whereaboutsAllocsPerSecond = 500.0 / 274.0

// benchAllocations is the number of allocations per measurement, the size
// of whereabouts' published run.
var benchAllocations = bench.Size(500, 20)

// TestBenchAllocationRate measures allocations per second against the
// envtest API server with 1, 10 and 50 concurrent allocators (each with its
// own client and informer cache, as agents on 1, 10 and 50 nodes), counts
// duplicates, and runs side by side in the same process a shared-pool
// allocator of the kind whereabouts uses (one pool object holding every
// allocation, updated with optimistic concurrency), so the ratio between
// the two designs is measured on the same machine at the same moment.
//
// A measurement, it has an API server of its own (testenv.Start), not the
// one the integration tests share and fill with thousands of pods.
func TestBenchAllocationRate(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	c := directClient(t, env)
	for _, n := range bench.Size([]int{1, 10, 50}, []int{1, 10}) {
		network := fmt.Sprintf("bench%d", n)
		rate, dups := measureClaims(t, env, network, n)
		fmt.Printf("BENCH ipam_claims_allocs_per_s_%d %.1f allocs/s\n", n, rate)
		fmt.Printf("BENCH ipam_claims_duplicates_%d %d count\n", n, dups)
		if dups != 0 {
			t.Errorf("%d allocators: %d addresses handed out twice", n, dups)
		}
		fmt.Printf("BENCH ipam_claims_vs_whereabouts_published_%d %.1f ratio\n", n, rate/whereaboutsAllocsPerSecond)

		poolRate, poolDups, conflicts := measureSharedPool(t, c, network, n)
		fmt.Printf("BENCH ipam_sharedpool_allocs_per_s_%d %.1f allocs/s\n", n, poolRate)
		fmt.Printf("BENCH ipam_sharedpool_conflicts_%d %d count\n", n, conflicts)
		fmt.Printf("BENCH ipam_sharedpool_duplicates_%d %d count\n", n, poolDups)
		if poolDups != 0 {
			t.Errorf("shared-pool comparison, %d allocators: %d addresses handed out twice", n, poolDups)
		}
		fmt.Printf("BENCH ipam_claims_vs_sharedpool_%d %.2f ratio\n", n, rate/poolRate)
	}
}

// measureClaims runs benchAllocations Ensure calls spread over n
// allocators and returns the rate and the number of duplicate addresses
// found among the returned addresses and the API server's claims.
func measureClaims(t *testing.T, env *testenv.Env, network string, n int) (float64, int) {
	allocs := make([]*ipam.Allocator, n)
	for i := range allocs {
		allocs[i] = newAllocator(t, env)
	}
	approval := v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.64.0.0/16"}}
	var mu sync.Mutex
	handed := map[string]int{}
	var wg sync.WaitGroup
	var failed error
	start := time.Now()
	for i, a := range allocs {
		wg.Go(func() {
			for k := range benchAllocations / n {
				o := ipam.Owner{Namespace: "ns", Name: fmt.Sprintf("a%d-%d", i, k), UID: string(uuid.NewUUID()), Node: fmt.Sprintf("node-%d", i)}
				got, err := a.Ensure(context.Background(), o, network, "net1", approval)
				mu.Lock()
				if err != nil {
					failed = errors.Join(failed, err)
				} else {
					handed[got[0].IP.String()]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if failed != nil {
		t.Fatal(failed)
	}
	dups := duplicates(handed)
	seen := map[string]bool{}
	for _, cl := range allClaims(t, env.Client, network) {
		if seen[cl.Spec.Address] {
			dups++
		}
		seen[cl.Spec.Address] = true
	}
	if len(seen) != benchAllocations {
		t.Errorf("%s: %d claims for %d allocations", network, len(seen), benchAllocations)
	}
	return float64(benchAllocations) / elapsed.Seconds(), dups
}

// measureSharedPool allocates from one ConfigMap that maps each allocated
// address to its pod, read and updated with a resourceVersion precondition
// and retried on conflict: the shape of a whereabouts IPPool.
func measureSharedPool(t *testing.T, c client.Client, network string, n int) (float64, int, int) {
	ctx := context.Background()
	pool := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pool-" + network}, Data: map[string]string{}}
	if err := c.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	prefix := netip.MustParsePrefix("10.64.0.0/16")
	var mu sync.Mutex
	handed := map[string]int{}
	conflicts := 0
	var failed error
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			for range benchAllocations / n {
				addr, tries, err := allocateShared(ctx, c, client.ObjectKeyFromObject(pool), prefix, string(uuid.NewUUID()))
				mu.Lock()
				conflicts += tries
				if err != nil {
					failed = errors.Join(failed, fmt.Errorf("allocator %d: %w", i, err))
				} else {
					handed[addr]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if failed != nil {
		t.Fatal(failed)
	}
	dups := duplicates(handed)
	return float64(benchAllocations) / elapsed.Seconds(), dups, conflicts
}

// allocateShared takes the lowest free address of the shared pool object,
// retrying when another allocator updated it first. It returns the address
// and the number of conflicts it met.
func allocateShared(ctx context.Context, c client.Client, key client.ObjectKey, prefix netip.Prefix, uid string) (string, int, error) {
	for conflicts := 0; ; conflicts++ {
		var cm corev1.ConfigMap
		if err := c.Get(ctx, key, &cm); err != nil {
			return "", conflicts, err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		addr := prefix.Addr().Next()
		for ; prefix.Contains(addr); addr = addr.Next() {
			if _, used := cm.Data[addr.String()]; !used {
				break
			}
		}
		cm.Data[addr.String()] = uid
		err := c.Update(ctx, &cm)
		if err == nil {
			return addr.String(), conflicts, nil
		}
		if !apierrors.IsConflict(err) {
			return "", conflicts, err
		}
	}
}

// duplicates counts the addresses handed out more than once.
func duplicates(handed map[string]int) int {
	dups := 0
	for _, k := range handed {
		dups += k - 1
	}
	return dups
}
