package bench

import (
	"os"
	"slices"
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
