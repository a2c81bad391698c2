package podwait

import (
	"strings"
	"testing"
)

func TestStatePID(t *testing.T) {
	for _, c := range []struct {
		state string
		pid   int
	}{
		{`{"ociVersion":"1.0.2","id":"c","status":"creating","pid":4242,"bundle":"/b"}`, 4242},
		{`{"annotations":{"pid":"7"},"pid" : 12}`, 12},
		{"{\n  \"pid\":\t99\n}", 99},
	} {
		if got, err := statePID(strings.NewReader(c.state)); err != nil || got != c.pid {
			t.Errorf("statePID(%s) = %d, %v; want %d", c.state, got, err, c.pid)
		}
	}
	for _, bad := range []string{`{"id":"c"}`, `{"pid":0}`, `{"annotations":{"pid":"7"}}`, `{"pid":-3}`, ``} {
		if got, err := statePID(strings.NewReader(bad)); err == nil {
			t.Errorf("statePID(%q) = %d, want an error", bad, got)
		}
	}
}
