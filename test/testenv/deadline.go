package testenv

import (
	"testing"
	"time"
)

// DeadlineMargin is how long before go test's -timeout TearDownBeforeTimeout
// tears down: long enough for a local cluster's Down.
const DeadlineMargin = 2 * time.Minute

// TearDownBeforeTimeout runs down shortly before the test binary's
// -timeout, if the test is still running then. go test ends a binary
// that times out with a panic, which runs no t.Cleanup: a local cluster's
// processes are detached (they outlive their caller by design, for make
// demo) and would go on loading the machine under the tests after it.
// The Cleanup it registers stops the timer once the test ends in time.
func TearDownBeforeTimeout(t testing.TB, down func()) {
	t.Helper()
	d, ok := deadlineOf(t)
	stop := afterDeadline(d, ok, DeadlineMargin, func() {
		t.Logf("go test's -timeout is %s away: tearing down now, as its panic runs no cleanup", DeadlineMargin)
		down()
	})
	t.Cleanup(stop)
}

// deadlineOf is t's deadline, where the test type has one.
func deadlineOf(t testing.TB) (time.Time, bool) {
	if dt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		return dt.Deadline()
	}
	return time.Time{}, false
}

// afterDeadline runs f margin before deadline (at once if that is past),
// unless there is no deadline (ok false) or the returned stop is called
// first.
func afterDeadline(deadline time.Time, ok bool, margin time.Duration, f func()) (stop func()) {
	if !ok {
		return func() {}
	}
	timer := time.AfterFunc(time.Until(deadline.Add(-margin)), f)
	return func() { timer.Stop() }
}
