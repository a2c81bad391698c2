package nldump

import (
	"errors"
	"testing"

	"github.com/vishvananda/netlink"
)

func TestRetry(t *testing.T) {
	for _, tc := range []struct {
		name        string
		interrupted int // dumps the kernel interrupts before a whole one
		wantCalls   int
		wantErr     bool
	}{
		{"whole at once", 0, 1, false},
		{"interrupted twice", 2, 3, false},
		{"always interrupted", Attempts + 5, Attempts, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			got, err := Retry(func() (int, error) {
				calls++
				if calls <= tc.interrupted {
					return -calls, netlink.ErrDumpInterrupted
				}
				return calls, nil
			})
			if calls != tc.wantCalls {
				t.Fatalf("dumped %d times, want %d", calls, tc.wantCalls)
			}
			if tc.wantErr {
				if !errors.Is(err, netlink.ErrDumpInterrupted) {
					t.Fatalf("err = %v, want it to wrap ErrDumpInterrupted", err)
				}
				return
			}
			if err != nil || got != calls {
				t.Fatalf("got %d, %v; want the whole dump %d", got, err, calls)
			}
		})
	}
}

func TestRetryKeepsOtherErrors(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	_, err := Retry(func() (int, error) { calls++; return 0, boom })
	if calls != 1 || !errors.Is(err, boom) {
		t.Fatalf("calls %d, err %v: another error must be returned at once", calls, err)
	}
}
