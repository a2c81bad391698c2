package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPUTimes are the machine's CPU times from the first line of /proc/stat,
// in clock ticks: busy is every state but idle and iowait.
type CPUTimes struct{ Busy, Total uint64 }

// ParseCPUTimes reads the aggregate "cpu" line of /proc/stat.
func ParseCPUTimes(stat string) (CPUTimes, error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return CPUTimes{}, fmt.Errorf("/proc/stat: first line %q is not the aggregate cpu line", line)
	}
	var t CPUTimes
	for i, s := range f[1:] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return CPUTimes{}, fmt.Errorf("/proc/stat: cpu field %d %q: %w", i+1, s, err)
		}
		t.Total += v
		// Fields 4 and 5 are idle and iowait; guest times are already
		// counted in user and nice, but adding them twice only
		// inflates both sums alike.
		if i != 3 && i != 4 {
			t.Busy += v
		}
	}
	return t, nil
}

// Busy is the fraction of CPU time spent busy between two readings, 0
// when no time passed.
func Busy(before, after CPUTimes) float64 {
	total := after.Total - before.Total
	if total == 0 || after.Total < before.Total {
		return 0
	}
	return float64(after.Busy-before.Busy) / float64(total)
}

func readCPUTimes() (CPUTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUTimes{}, err
	}
	return ParseCPUTimes(string(b))
}

// QuietWindow is how long each look at the machine's CPU lasts.
const QuietWindow = 2 * time.Second

// WaitQuiet waits until the machine's CPUs were busy at most maxBusy (a
// fraction) over one QuietWindow, or until limit passed, and returns how
// long it waited and the busy fraction of the last window. A bench calls
// it between the arms it compares, so that one arm does not run while the
// machine still finishes the last one's work (the kubelet's and the
// runtime's cleanup, the API server's compaction) and another on an idle
// machine.
func WaitQuiet(maxBusy float64, limit time.Duration) (waited time.Duration, busy float64, err error) {
	start := time.Now()
	for {
		before, err := readCPUTimes()
		if err != nil {
			return time.Since(start), 0, err
		}
		time.Sleep(QuietWindow)
		after, err := readCPUTimes()
		if err != nil {
			return time.Since(start), 0, err
		}
		busy = Busy(before, after)
		if busy <= maxBusy || time.Since(start) >= limit {
			return time.Since(start), busy, nil
		}
	}
}
