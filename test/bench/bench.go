package bench

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Percentile returns the p-th quantile (0 ≤ p ≤ 1) of d by nearest rank,
// without reordering d. It panics on an empty d, which is a broken bench.
func Percentile[T cmp.Ordered](d []T, p float64) T {
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

// MustGauge is Gauge for a figure's test: a missing metric fails it.
func MustGauge(t testing.TB, metrics, name string) float64 {
	t.Helper()
	v, err := Gauge(metrics, name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// ProcStatus reads the kB fields of /proc/<pid>/status (VmRSS, VmHWM,
// RssAnon, RssFile, …) in KiB: the kernel's own split of a process's
// resident memory into anonymous pages (heap, stacks) and pages of mapped
// files (the binary).
func ProcStatus(pid int) (map[string]int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil, fmt.Errorf("status of pid %d: %w", pid, err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if f := strings.Fields(v); ok && len(f) == 2 && f[1] == "kB" {
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("status of pid %d, %s: %w", pid, k, err)
			}
			out[k] = n
		}
	}
	if _, ok := out["VmRSS"]; !ok {
		return nil, fmt.Errorf("status of pid %d: no VmRSS (has the process exited?)", pid)
	}
	return out, nil
}

// Sum adds up the samples of a labelled counter or gauge in a Prometheus
// text exposition whose labels include every one of labels (each written
// as in the exposition, e.g. `verb="LIST"`).
func Sum(metrics, name string, labels ...string) float64 {
	var sum float64
	eachSample(metrics, name, labels, func(_ string, v float64) { sum += v })
	return sum
}

// eachSample calls f with the label set and the value of each sample of
// name whose labels include every one of labels.
func eachSample(metrics, name string, labels []string, f func(set string, v float64)) {
	for _, line := range strings.Split(metrics, "\n") {
		rest, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			continue
		}
		set, value, ok := strings.Cut(rest, "} ")
		if !ok || !containsAll(set, labels) {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			f(set, v)
		}
	}
}

func containsAll(set string, labels []string) bool {
	for _, l := range labels {
		if !slices.Contains(strings.Split(set, ","), l) {
			return false
		}
	}
	return true
}

// Bucket is one cumulative bucket of a Prometheus histogram: Count
// observations were at most LE.
type Bucket struct{ LE, Count float64 }

// Buckets reads the cumulative buckets of the histogram name whose labels
// include every one of labels, summed over the other labels, by LE (+Inf
// last).
func Buckets(metrics, name string, labels ...string) []Bucket {
	counts := map[float64]float64{}
	eachSample(metrics, name+"_bucket", labels, func(set string, v float64) {
		for _, l := range strings.Split(set, ",") {
			if le, ok := strings.CutPrefix(l, `le="`); ok {
				bound, _ := strconv.ParseFloat(strings.TrimSuffix(le, `"`), 64)
				counts[bound] += v
			}
		}
	})
	out := make([]Bucket, 0, len(counts))
	for le, n := range counts {
		out = append(out, Bucket{LE: le, Count: n})
	}
	slices.SortFunc(out, func(a, b Bucket) int { return cmp.Compare(a.LE, b.LE) })
	return out
}

// Quantile estimates the q-quantile (0 < q ≤ 1) of the observations made
// between two scrapes of the same histogram, as Prometheus'
// histogram_quantile does: linearly within the bucket that holds it, and
// the largest finite bound when it falls in +Inf's. It is NaN when there
// was no observation.
func Quantile(before, after []Bucket, q float64) float64 {
	prev := map[float64]float64{}
	for _, b := range before {
		prev[b.LE] = b.Count
	}
	if len(after) == 0 {
		return math.NaN()
	}
	total := after[len(after)-1].Count - prev[after[len(after)-1].LE]
	if total <= 0 {
		return math.NaN()
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for _, b := range after {
		n := b.Count - prev[b.LE]
		if n >= rank {
			if math.IsInf(b.LE, 1) {
				return lower
			}
			return lower + (b.LE-lower)*(rank-below)/(n-below)
		}
		lower, below = b.LE, n
	}
	return lower
}
