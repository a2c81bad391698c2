package bench

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Percentile returns the p-th quantile (0 ≤ p ≤ 1) of d by nearest rank,
// without reordering d. It panics on an empty d, which is a broken bench.
func Percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))]
}

// LoadAverage is the machine's one-minute load average as the kernel prints
// it, or "unknown" when /proc/loadavg cannot be read.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil || len(strings.Fields(string(b))) == 0 {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}

// Requests sums client-go's rest_client_requests_total, as a
// controller-runtime binary serves it on /metrics, into reads (GET, which
// includes lists and watches) and writes (every other method).
func Requests(metrics string) (reads, writes float64) {
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, "rest_client_requests_total{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			continue
		}
		if strings.Contains(line, `method="GET"`) {
			reads += v
		} else {
			writes += v
		}
	}
	return reads, writes
}

// Gauge is the value of an unlabelled metric in a Prometheus text
// exposition, or an error naming the metric when it is absent or not a
// number.
func Gauge(metrics, name string) (float64, error) {
	for _, line := range strings.Split(metrics, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("metric %s: %w", name, err)
			}
			return f, nil
		}
	}
	return 0, fmt.Errorf("metric %s: not in the metrics", name)
}
