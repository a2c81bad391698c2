package agent

import (
	"errors"
	"time"

	"podnet.io/podnet/api/v1alpha1"
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
	var over *ipam.QuotaExceededError
	if errors.As(err, &over) {
		return over.RetryAfter
	}
	return 0
}

// ipamReason is the condition reason and Event reason of an IPAM error.
func ipamReason(err error) string {
	var over *ipam.QuotaExceededError
	if errors.As(err, &over) || macQuotaExceeded(err) {
		return v1alpha1.ReasonQuotaExceeded
	}
	return v1alpha1.ReasonIPAMFailed
}
