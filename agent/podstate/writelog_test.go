package podstate

import (
	"testing"
	"time"
)

// TestWriteLogForgetsAfterWriteMemory: a write is recent for WriteMemory,
// of its own kind and content only.
func TestWriteLogForgetsAfterWriteMemory(t *testing.T) {
	var l WriteLog
	t0 := time.Unix(1000, 0)
	if l.Recently("condition", "x", t0) {
		t.Fatal("an empty log holds a write")
	}
	l.Note("condition", "x", t0)
	for _, c := range []struct {
		kind, content string
		at            time.Time
		want          bool
	}{
		{"condition", "x", t0.Add(WriteMemory - time.Millisecond), true},
		{"condition", "x", t0.Add(WriteMemory), false},
		{"condition", "y", t0, false},
		{"annotation", "x", t0, false},
	} {
		if got := l.Recently(c.kind, c.content, c.at); got != c.want {
			t.Errorf("%s %q at +%v: %v, want %v", c.kind, c.content, c.at.Sub(t0), got, c.want)
		}
	}
}
