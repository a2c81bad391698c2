package podwait

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/vishvananda/netlink"
)

// Wait polls the calling process' network namespace every poll until every
// interface in names exists and is up, and returns a *TimeoutError naming
// what is missing when timeout passes first.
func Wait(ctx context.Context, names []string, timeout, poll time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last []string
	for {
		have, err := observe(names)
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

// observe looks up each wanted link by name; an absent one is left out.
func observe(names []string) (map[string]Link, error) {
	have := map[string]Link{}
	for _, name := range names {
		l, err := netlink.LinkByName(name)
		var notFound netlink.LinkNotFoundError
		if errors.As(err, &notFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("interface %q: %w", name, err)
		}
		have[name] = Link{Name: name, Up: l.Attrs().Flags&net.FlagUp != 0}
	}
	return have, nil
}
