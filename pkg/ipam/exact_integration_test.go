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

// TestIntegrationExactPoolEveryPodAddressed fills a pool with exactly as
// many pods as it has free addresses (a /24 with its gateway: 253), from
// four allocators at once, each with its own client, cache and pool
// backoff, as four agents would be. Every pod must get an address on its
// first attempts, with no attempt ever told to wait in backoff (the
// backoff's first delay is a minute, so a wait would show); the addresses
// are distinct and agree with the claims. The pod after them is told the
// pool is exhausted, naming network and pool, and is put in backoff.
func TestIntegrationExactPoolEveryPodAddressed(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	const (
		allocators = 4
		network    = "data"
		free       = 253
	)
	pool := netip.MustParsePrefix("10.30.0.0/24")
	approval := v1alpha1.ApprovedIPAM{AddressSpace: testSpace, Pools: []string{pool.String()}, Gateways: []string{"10.30.0.1"}}
	c := directClient(t, env)
	var pods [allocators][]ipam.Owner
	for k := range free {
		o := createPod(t, c, "default")
		o.Node = fmt.Sprintf("node-%d", k%allocators)
		pods[k%allocators] = append(pods[k%allocators], o)
	}
	allocs := make([]*ipam.Allocator, allocators)
	var mu sync.Mutex
	handed := map[string]string{}
	var wg sync.WaitGroup
	errs := make(chan error, free)
	for n := range allocators {
		allocs[n] = newAllocator(t, env).WithPoolBackoff(ipam.NewPoolBackoff(time.Minute, 5*time.Minute))
		// Four pods at a time per allocator, as an agent's workers do.
		work := make(chan ipam.Owner)
		for range 4 {
			wg.Go(func() {
				for o := range work {
					addr, err := ensureWithoutBackoff(allocs[n], o, network, approval)
					if err != nil {
						errs <- fmt.Errorf("pod %s: %w", o, err)
						continue
					}
					mu.Lock()
					if prev, dup := handed[addr]; dup {
						errs <- fmt.Errorf("address %s handed to both %s and %s", addr, prev, o)
					}
					handed[addr] = o.String()
					mu.Unlock()
				}
			})
		}
		wg.Go(func() {
			for _, o := range pods[n] {
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
		return
	}
	if len(handed) != free {
		t.Fatalf("%d distinct addresses handed to %d pods", len(handed), free)
	}
	if claims := allClaims(t, c, network); len(claims) != free {
		t.Fatalf("API server holds %d claims for %d pods", len(claims), free)
	}

	// One pod too many: the pool is full, said clearly, and waits.
	extra := createPod(t, c, "default")
	_, err := allocs[0].Ensure(context.Background(), extra, network, "net1", approval)
	var full *ipam.ExhaustedError
	if !errors.As(err, &full) || !full.Whole || full.RetryAfter <= 0 {
		t.Fatalf("pod beyond the pool: err = %v (%+v), want a whole-pool ExhaustedError with a backoff", err, full)
	}
	if want := `pool 10.30.0.0/24 of network "data" is exhausted: every usable address is claimed`; !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("message %q does not end in %q", err, want)
	}
}

// ensureWithoutBackoff allocates one address for o, trying again at once
// (as the agent's per-pod rate limiter does) while an attempt is refused
// without a backoff (its candidates were taken by other allocators a
// moment before), and fails when an attempt is told to wait in backoff.
func ensureWithoutBackoff(a *ipam.Allocator, o ipam.Owner, network string, approval v1alpha1.ApprovedIPAM) (string, error) {
	for range 20 {
		got, err := a.Ensure(context.Background(), o, network, "net1", approval)
		var full *ipam.ExhaustedError
		switch {
		case err == nil:
			return got[0].IP.String(), nil
		case errors.As(err, &full) && full.RetryAfter > 0:
			return "", fmt.Errorf("put in backoff for %s with free addresses left: %w", full.RetryAfter, err)
		case !errors.As(err, &full):
			return "", err
		}
	}
	return "", fmt.Errorf("no address after 20 attempts")
}
