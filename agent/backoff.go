package agent

import (
	"errors"
	"time"

	"podnet.io/podnet/pkg/ipam"
)

// A pool with no free address is left alone for PoolBackoffBase after the
// first fruitless attempt, twice as long after each next one, up to
// PoolBackoffMax (ipam.PoolBackoff, with jitter). Waiting pods are retried
// when their pool's delay has passed, not on every event.
const (
	PoolBackoffBase = time.Second
	PoolBackoffMax  = 5 * time.Minute
)

// retryAfter is how long to wait before trying the pod again when err says
// that a pool is in backoff; 0 otherwise (the controller's own per-pod rate
// limiter then applies).
func retryAfter(err error) time.Duration {
	var full *ipam.ExhaustedError
	if errors.As(err, &full) {
		return full.RetryAfter
	}
	return 0
}
