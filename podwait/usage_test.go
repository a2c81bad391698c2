package podwait

import (
	"strings"
	"testing"
	"time"
)

func TestUsageRoundTrips(t *testing.T) {
	u := Usage{Waited: 1234 * time.Millisecond, CPU: 2310 * time.Microsecond, MaxRSS: 2868 << 10, CgroupPeak: 3120 << 10}
	msg := "net1,net2 up " + u.String()
	if msg != "net1,net2 up (waited=1.234s cpu=2.31ms maxrss=2868KiB cgroup-peak=3120KiB)" {
		t.Fatalf("message %q", msg)
	}
	got, err := ParseUsage(msg)
	if err != nil || got != u {
		t.Fatalf("ParseUsage(%q) = %+v, %v; want %+v", msg, got, err, u)
	}
	u.CgroupPeak = -1
	failed := "not ready after 5m0s: net2 (absent) (is podnet-agent running?) " + u.String()
	if got, err := ParseUsage(failed); err != nil || got != u || !strings.HasSuffix(failed, "cgroup-peak=-)") {
		t.Fatalf("ParseUsage(%q) = %+v, %v", failed, got, err)
	}
}

func TestParseUsageNamesWhatIsWrong(t *testing.T) {
	for msg, want := range map[string]string{
		"net1 up": "no (waited=",
		"net1 up (waited=1s cpu=2ms maxrss=1KiB)":                   "want 4 fields",
		"net1 up (waited=soon cpu=2ms maxrss=1KiB cgroup-peak=-)":   `field "waited=soon"`,
		"net1 up (waited=1s cpu=2ms maxrss=1MiB cgroup-peak=-)":     `field "maxrss=1MiB"`,
		"net1 up (waited=1s cpu=2ms maxrss=-1KiB cgroup-peak=-)":    `field "maxrss=-1KiB"`,
		"net1 up (waited=1s cpu=2ms colour=blueKiB cgroup-peak=-)":  `field "colour=blueKiB": unknown field`,
		"net1 up (waited=1s cpu=2ms maxrss=1KiB cgroup-peak=-) now": "no (waited=",
	} {
		if _, err := ParseUsage(msg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseUsage(%q) = %v, want an error containing %q", msg, err, want)
		}
	}
}

func FuzzParseUsage(f *testing.F) {
	f.Add("net1 up (waited=12ms cpu=2.31ms maxrss=2868KiB cgroup-peak=3000KiB)")
	f.Add("(waited=")
	f.Add("(waited=)")
	f.Fuzz(func(t *testing.T, msg string) {
		u, err := ParseUsage(msg)
		if err != nil {
			return
		}
		// What parses is printed back to a message that parses the same.
		again, err := ParseUsage(u.String())
		if err != nil || again.MaxRSS != u.MaxRSS || again.CgroupPeak != u.CgroupPeak {
			t.Fatalf("%q parsed to %+v, printed %q, parsed again to %+v, %v", msg, u, u.String(), again, err)
		}
	})
}
