package bench

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	d := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0, 1}, {0.5, 5}, {0.99, 9}, {1, 10}} {
		if got := Percentile(d, c.p); got != c.want {
			t.Errorf("Percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if d[0] != 5 {
		t.Errorf("Percentile reordered its input: %v", d)
	}
}
