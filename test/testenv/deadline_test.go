package testenv

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestAfterDeadlineRunsBeforeTheDeadline(t *testing.T) {
	done := make(chan struct{})
	afterDeadline(time.Now().Add(time.Hour), true, time.Hour+time.Millisecond, func() { close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("f not run although the deadline less the margin had passed")
	}
}

func TestAfterDeadlineStopsOrWithoutDeadline(t *testing.T) {
	var ran atomic.Int32
	f := func() { ran.Add(1) }
	stop := afterDeadline(time.Now().Add(50*time.Millisecond), true, 0, f)
	stop()
	afterDeadline(time.Time{}, false, 0, f)()
	afterDeadline(time.Time{}, false, 0, f)
	time.Sleep(200 * time.Millisecond)
	if n := ran.Load(); n != 0 {
		t.Fatalf("f ran %d times: stopped before the deadline, or without one", n)
	}
}
