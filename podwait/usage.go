package podwait

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Usage is what one run of podnet-wait cost: how long it waited, the CPU
// time it used and its peak resident memory, and the peak memory of its
// container's cgroup, which the container's limit applies to. It ends
// the termination message, which the kubelet keeps in the pod's status
// (`kubectl describe pod`), so the wait container's requests and limits
// can be checked against what it used in real pods (the burst bench
// reads it).
type Usage struct {
	Waited time.Duration
	CPU    time.Duration // user and system, of the process
	MaxRSS int64         // bytes: the process's peak resident set
	// CgroupPeak is the cgroup's peak memory in bytes (memory.peak, or
	// v1's memory.max_usage_in_bytes), -1 when the container cannot read
	// it.
	CgroupPeak int64
}

// usageOpen starts the usage part of a message.
const usageOpen = "(waited="

// String is the usage as the last part of the termination message:
// "(waited=12ms cpu=2.31ms maxrss=2868KiB cgroup-peak=3120KiB)", with
// "cgroup-peak=-" when it is unknown.
func (u Usage) String() string {
	peak := "-"
	if u.CgroupPeak >= 0 {
		peak = fmt.Sprintf("%dKiB", u.CgroupPeak>>10)
	}
	return fmt.Sprintf("%s%s cpu=%s maxrss=%dKiB cgroup-peak=%s)", usageOpen, u.Waited.Round(time.Millisecond), u.CPU.Round(10*time.Microsecond), u.MaxRSS>>10, peak)
}

// ParseUsage reads the usage from the end of a termination message, with
// an error naming the part that is missing or malformed.
func ParseUsage(msg string) (Usage, error) {
	i := strings.LastIndex(msg, usageOpen)
	if i < 0 || !strings.HasSuffix(msg, ")") {
		return Usage{}, errors.New("termination message: no (waited=… cpu=… maxrss=…KiB cgroup-peak=…) at its end")
	}
	var u Usage
	fields := strings.Fields(msg[i+1 : len(msg)-1])
	if len(fields) != 4 {
		return Usage{}, fmt.Errorf("termination message usage %q: want 4 fields", msg[i:])
	}
	for _, f := range fields {
		key, value, _ := strings.Cut(f, "=")
		var err error
		switch key {
		case "waited":
			u.Waited, err = time.ParseDuration(value)
		case "cpu":
			u.CPU, err = time.ParseDuration(value)
		case "maxrss":
			u.MaxRSS, err = parseKiB(value)
		case "cgroup-peak":
			u.CgroupPeak = -1
			if value != "-" {
				u.CgroupPeak, err = parseKiB(value)
			}
		default:
			err = errors.New("unknown field")
		}
		if err != nil {
			return Usage{}, fmt.Errorf("termination message usage field %q: %w", f, err)
		}
	}
	return u, nil
}

// parseKiB reads "2868KiB" as bytes.
func parseKiB(v string) (int64, error) {
	kib, err := strconv.ParseInt(strings.TrimSuffix(v, "KiB"), 10, 64)
	if err != nil || !strings.HasSuffix(v, "KiB") || kib < 0 || kib > 1<<40 {
		return 0, errors.New("want a count of KiB")
	}
	return kib << 10, nil
}
