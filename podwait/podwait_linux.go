package podwait

import (
	"context"
	"errors"
	"time"
)

// Wait polls the calling thread's network namespace every poll until every
// interface in names exists and is up, and returns a *TimeoutError naming
// what is missing when timeout passes first. Each poll is one link dump,
// whatever the number of names.
func Wait(ctx context.Context, names []string, timeout, poll time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last []string
	buf := make([]byte, recvBufferSize)
	for {
		have, err := listLinks(buf)
		if err != nil {
			return err
		}
		if last = pending(names, have); len(last) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return &TimeoutError{After: timeout, Pending: last}
			}
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}
