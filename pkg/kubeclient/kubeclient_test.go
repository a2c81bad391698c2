package kubeclient

import (
	"strings"
	"testing"
)

func TestValidateLimits(t *testing.T) {
	for _, c := range []struct {
		qps   float64
		burst int
		want  []string
	}{
		{20, 40, nil},
		{1000, 2000, nil},
		{0, 40, []string{"--kube-api-qps 0"}},
		{1001, 40, []string{"--kube-api-qps 1001"}},
		{20, 0, []string{"--kube-api-burst 0"}},
		{-1, 2001, []string{"--kube-api-qps -1", "--kube-api-burst 2001"}},
	} {
		err := ValidateLimits(c.qps, c.burst)
		if (err == nil) != (c.want == nil) {
			t.Errorf("ValidateLimits(%g, %d) = %v, want errors %v", c.qps, c.burst, err, c.want)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ValidateLimits(%g, %d) = %v, want it to name %q", c.qps, c.burst, err, w)
			}
		}
	}
}
