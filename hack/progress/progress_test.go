package progress

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// lines is a writer that hands every line to a channel as well.
type lines struct {
	mu  sync.Mutex
	all []string
	ch  chan string
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		l.all = append(l.all, s)
		select {
		case l.ch <- s:
		default:
		}
	}
	return len(p), nil
}

// TestStageSaysStillWhileRunning: a stage that runs across ticks prints
// "still …" lines, and none after its outcome. The stage ends only once a
// tick has been seen, so the test does not depend on timing.
func TestStageSaysStillWhileRunning(t *testing.T) {
	w := &lines{ch: make(chan string, 100)}
	err := stage(w, "building Kubernetes v1.35.4", "about 6 min cold, cached after", time.Millisecond, func() error {
		for s := range w.ch {
			if strings.HasPrefix(s, "  still building Kubernetes v1.35.4 (") {
				return nil
			}
		}
		return errors.New("writer closed")
	})
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.all[0] != "building Kubernetes v1.35.4 (about 6 min cold, cached after)…" {
		t.Errorf("start line %q", w.all[0])
	}
	last := w.all[len(w.all)-1]
	if !strings.HasPrefix(last, "building Kubernetes v1.35.4… done in ") {
		t.Errorf("last line %q, want the outcome", last)
	}
}

func TestStageReportsFailure(t *testing.T) {
	w := &lines{ch: make(chan string, 100)}
	boom := errors.New("boom")
	if err := stage(w, "importing images", "", time.Hour, func() error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	if got := strings.Join(w.all, "\n"); !strings.HasPrefix(got, "importing images…\nimporting images… failed after ") {
		t.Fatalf("output:\n%s", got)
	}
}
