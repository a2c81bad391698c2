package ipam_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/test/testenv"
)

// exactAllocators is how many allocators (agents) fill an exact pool or
// quota at once in these tests, each serving four pods at a time.
const exactAllocators = 4

// TestIntegrationExactPoolEveryPodAddressed fills a pool with exactly as
// many pods as it has free addresses (a /24 with its gateway: 253), from
// four allocators at once, each with its own client, cache and pool
// backoff, as four agents would be. Every pod must get an address without
// ever being told to wait in backoff (the backoff's first delay is a
// minute, so a wait would show); the addresses are distinct and agree with
// the claims. The pod after them is told the pool is exhausted, naming
// network and pool, and is put in backoff.
func TestIntegrationExactPoolEveryPodAddressed(t *testing.T) {
	env := sharedEnv(t)
	pool := netip.MustParsePrefix("10.32.0.0/24")
	approval := v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{pool.String()}, Gateways: []string{"10.32.0.1"}}
	allocs := fillAtOnce(t, env, "default", 253, approval)

	// One pod too many: the pool is full, said clearly, and waits.
	extra := createPod(t, directClient(t, env), "default")
	_, err := allocs[0].Ensure(context.Background(), extra, "data", "net1", approval)
	var full *ipam.ExhaustedError
	if !errors.As(err, &full) || !full.Whole || full.RetryAfter <= 0 {
		t.Fatalf("pod beyond the pool: err = %v, want a whole-pool ExhaustedError with a backoff", err)
	}
	if want := `pool 10.32.0.0/24 of network "data" is exhausted: every usable address is claimed`; !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("message %q does not end in %q", err, want)
	}
}

// TestIntegrationExactQuotaEveryPodAddressed does the same with a
// namespace's quota: 200 pods of a namespace whose quota is 200, from a
// roomy pool, all get a quota slot and an address without a wait in
// backoff; the 201st is told the namespace's quota is used up and waits.
func TestIntegrationExactQuotaEveryPodAddressed(t *testing.T) {
	env := sharedEnv(t)
	ns := createNamespace(t, directClient(t, env), "exact")
	approval := v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{"10.31.0.0/16"}, MaxPerNamespace: 200}
	allocs := fillAtOnce(t, env, ns, 200, approval)

	extra := createPod(t, directClient(t, env), ns)
	_, err := allocs[0].Ensure(context.Background(), extra, "data", "net1", approval)
	var over *ipam.QuotaExceededError
	if !errors.As(err, &over) || over.RetryAfter <= 0 || over.Namespace != ns || over.Max != 200 {
		t.Fatalf("pod beyond the quota: err = %v, want a QuotaExceededError with a backoff", err)
	}
}

// fillAtOnce creates n pods in namespace and has them all ask for an
// address of approval at once, spread over exactAllocators allocators. It
// fails the test when a pod is put in backoff, gets no address, or gets
// one another pod got, or when the claims do not match, and returns the
// allocators.
func fillAtOnce(t *testing.T, env *testenv.Env, namespace string, n int, approval v1alpha1.ApprovedIPAM) []*ipam.Allocator {
	t.Helper()
	c := directClient(t, env)
	pods := make([][]ipam.Owner, exactAllocators)
	for k := range n {
		o := createPod(t, c, namespace)
		o.Node = fmt.Sprintf("node-%d", k%exactAllocators)
		pods[k%exactAllocators] = append(pods[k%exactAllocators], o)
	}
	allocs := make([]*ipam.Allocator, exactAllocators)
	var mu sync.Mutex
	handed := map[string]string{}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range allocs {
		allocs[i] = newAllocator(t, env).WithPoolBackoff(ipam.NewPoolBackoff(time.Minute, 5*time.Minute))
		work := make(chan ipam.Owner)
		for range 4 {
			wg.Go(func() {
				for o := range work {
					addr, err := ensureWithoutBackoff(allocs[i], o, approval)
					mu.Lock()
					if prev, dup := handed[addr]; err == nil && dup {
						err = fmt.Errorf("address %s handed to %s already", addr, prev)
					}
					handed[addr] = o.String()
					mu.Unlock()
					if err != nil {
						errs <- fmt.Errorf("pod %s: %w", o, err)
					}
				}
			})
		}
		wg.Go(func() {
			for _, o := range pods[i] {
				work <- o
			}
			close(work)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	addrClaims := 0
	for _, cl := range allClaims(t, c, "data") {
		if cl.Spec.Slot == nil {
			addrClaims++
		}
	}
	if len(handed) != n || addrClaims != n {
		t.Fatalf("%d pods got %d distinct addresses, and the API server holds %d address claims", n, len(handed), addrClaims)
	}
	return allocs
}

// ensureWithoutBackoff allocates one address for o on network "data",
// trying again at once (as the agent's per-pod rate limiter does) while
// an attempt is refused without a backoff (its candidates were taken by
// other allocators a moment before), and fails when an attempt is told to
// wait in backoff.
func ensureWithoutBackoff(a *ipam.Allocator, o ipam.Owner, approval v1alpha1.ApprovedIPAM) (string, error) {
	for range 20 {
		got, err := a.Ensure(context.Background(), o, "data", "net1", approval)
		var full *ipam.ExhaustedError
		var over *ipam.QuotaExceededError
		switch {
		case err == nil:
			return got[0].IP.String(), nil
		case errors.As(err, &full) && full.RetryAfter > 0:
			return "", fmt.Errorf("put in backoff for %s with free addresses left: %w", full.RetryAfter, err)
		case errors.As(err, &over) && over.RetryAfter > 0:
			return "", fmt.Errorf("put in backoff for %s with free quota slots left: %w", over.RetryAfter, err)
		case full == nil && over == nil:
			return "", err
		}
	}
	return "", fmt.Errorf("no address after 20 attempts")
}
