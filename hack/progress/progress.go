package progress

import (
	"fmt"
	"io"
	"time"
)

// Interval is how often a running stage says it is still running: below
// the 30 s a user waits before wondering whether anything happens.
const Interval = 20 * time.Second

// Stage runs f as the stage "what", writing to w a start line (with
// expect, the expected duration, when not empty), a line every Interval
// while f runs, and the outcome with the elapsed time. It returns f's
// error.
func Stage(w io.Writer, what, expect string, f func() error) error {
	return stage(w, what, expect, Interval, f)
}

func stage(w io.Writer, what, expect string, every time.Duration, f func() error) error {
	if w == nil {
		w = io.Discard
	}
	start := time.Now()
	if expect != "" {
		fmt.Fprintf(w, "%s (%s)…\n", what, expect)
	} else {
		fmt.Fprintf(w, "%s…\n", what)
	}
	stop := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				fmt.Fprintf(w, "  still %s (%s)\n", what, Elapsed(start))
			}
		}
	}()
	err := f()
	close(stop)
	<-ticked // no "still" line after the outcome
	if err != nil {
		fmt.Fprintf(w, "%s… failed after %s\n", what, Elapsed(start))
		return err
	}
	fmt.Fprintf(w, "%s… done in %s\n", what, Elapsed(start))
	return nil
}

// Elapsed is the time since start, to the second ("5m41s").
func Elapsed(start time.Time) string {
	return time.Since(start).Round(time.Second).String()
}
