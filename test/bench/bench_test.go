package bench

import (
	"fmt"
	"math"
	"os"
	"strings"
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

func TestRequestsSplitsReadsAndWrites(t *testing.T) {
	metrics := `# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="10.0.0.1:6443",method="GET"} 12
rest_client_requests_total{code="200",host="10.0.0.1:6443",method="PATCH"} 200
rest_client_requests_total{code="201",host="10.0.0.1:6443",method="POST"} 301
rest_client_requests_total{code="409",host="10.0.0.1:6443",method="POST"} 3
rest_client_request_duration_seconds_count{host="10.0.0.1:6443",verb="GET"} 99
`
	reads, writes := Requests(metrics)
	if reads != 12 || writes != 504 {
		t.Fatalf("reads %v writes %v, want 12 and 504", reads, writes)
	}
}

func TestGauge(t *testing.T) {
	metrics := `# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes 2.5165824e+07
go_memstats_heap_inuse_bytes_total 7
go_goroutines 42
go_broken abc
`
	if v, err := Gauge(metrics, "go_memstats_heap_inuse_bytes"); err != nil || v != 25165824 {
		t.Errorf("heap_inuse = %v, %v; want 25165824", v, err)
	}
	if v, err := Gauge(metrics, "go_goroutines"); err != nil || v != 42 {
		t.Errorf("goroutines = %v, %v; want 42", v, err)
	}
	if _, err := Gauge(metrics, "go_threads"); err == nil {
		t.Error("a missing metric gave no error")
	}
	if _, err := Gauge(metrics, "go_broken"); err == nil {
		t.Error("a value that is not a number gave no error")
	}
}

func TestProcStatusSplitsResidentMemory(t *testing.T) {
	st, err := ProcStatus(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// The kernel counts VmRSS as the sum of the three kinds of pages.
	if st["VmRSS"] == 0 || st["RssAnon"] == 0 || st["RssFile"] == 0 || st["VmRSS"] != st["RssAnon"]+st["RssFile"]+st["RssShmem"] {
		t.Fatalf("status %v: VmRSS is not RssAnon + RssFile + RssShmem", st)
	}
	if _, err := ProcStatus(-1); err == nil {
		t.Fatal("no error for a process that does not exist")
	}
}

func TestSumAddsMatchingSamples(t *testing.T) {
	metrics := `# TYPE apiserver_request_total counter
apiserver_request_total{code="200",resource="namespaces",verb="LIST",version="v1"} 3
apiserver_request_total{code="200",resource="namespaces",verb="WATCH",version="v1"} 2
apiserver_request_total{code="500",resource="namespaces",verb="LIST",version="v1"} 1
apiserver_request_total{code="200",resource="namespaceslist",verb="LIST",version="v1"} 100
apiserver_request_total_other{resource="namespaces",verb="LIST"} 50
`
	if got := Sum(metrics, "apiserver_request_total", `resource="namespaces"`, `verb="LIST"`); got != 4 {
		t.Errorf("LIST of namespaces = %v, want 4", got)
	}
	if got := Sum(metrics, "apiserver_request_total", `verb="WATCH"`); got != 2 {
		t.Errorf("WATCH = %v, want 2", got)
	}
	if got := Sum(metrics, "apiserver_request_total", `verb="DELETE"`); got != 0 {
		t.Errorf("DELETE = %v, want 0", got)
	}
}

func TestQuantileOfObservationsBetweenScrapes(t *testing.T) {
	scrape := func(counts ...int) string {
		var b strings.Builder
		for i, le := range []string{"0.1", "0.5", "1", "+Inf"} {
			fmt.Fprintf(&b, "h_bucket{step=\"total\",le=%q} %d\nh_bucket{step=\"wait\",le=%q} 99\n", le, counts[i], le)
		}
		return b.String()
	}
	before := Buckets(scrape(10, 10, 10, 10), "h", `step="total"`)
	// 100 new observations: 20 up to 0.1, 60 in (0.1, 0.5], 20 in (0.5, 1].
	after := Buckets(scrape(30, 90, 110, 110), "h", `step="total"`)
	if len(after) != 4 || !math.IsInf(after[3].LE, 1) {
		t.Fatalf("buckets %v, want 4 sorted with +Inf last", after)
	}
	for _, c := range []struct{ q, want float64 }{{0.1, 0.05}, {0.5, 0.3}, {0.9, 0.75}, {1, 1}} {
		if got := Quantile(before, after, c.q); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("q%v = %v, want %v", c.q, got, c.want)
		}
	}
	if got := Quantile(after, after, 0.5); !math.IsNaN(got) {
		t.Errorf("no new observation: q0.5 = %v, want NaN", got)
	}
	inf := Buckets(scrape(0, 0, 0, 5), "h", `step="total"`)
	if got := Quantile(nil, inf, 0.99); got != 1 {
		t.Errorf("all above the last bound: q0.99 = %v, want that bound, 1", got)
	}
}

func TestSizeIsSmallOnlyInSmoke(t *testing.T) {
	t.Setenv(SmokeEnv, "")
	if got := Size(100, 2); got != 100 {
		t.Errorf("Size without %s = %d, want the full 100", SmokeEnv, got)
	}
	t.Setenv(SmokeEnv, "1")
	if got := Size(100, 2); got != 2 {
		t.Errorf("Size with %s=1 = %d, want the small 2", SmokeEnv, got)
	}
}

func TestLevelsPicksTheRunsSize(t *testing.T) {
	for _, c := range []struct {
		smoke, full string
		want        int
	}{{"", "", 10}, {"", "1", 100}, {"1", "", 2}, {"1", "1", 2}} {
		t.Setenv(SmokeEnv, c.smoke)
		t.Setenv(FullEnv, c.full)
		if got := Levels(100, 10, 2); got != c.want {
			t.Errorf("Levels with %s=%q %s=%q = %d, want %d", SmokeEnv, c.smoke, FullEnv, c.full, got, c.want)
		}
	}
}

func TestParseCPUTimes(t *testing.T) {
	stat := "cpu  100 5 50 800 40 3 2 0 0 0\ncpu0 50 2 25 400 20 1 1 0 0 0\n"
	got, err := ParseCPUTimes(stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := (CPUTimes{Busy: 160, Total: 1000}); got != want {
		t.Fatalf("ParseCPUTimes = %+v, want %+v (idle and iowait are not busy)", got, want)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5\n", "cpu 1 2 x 4 5\n"} {
		if _, err := ParseCPUTimes(bad); err == nil || !strings.Contains(err.Error(), "/proc/stat") {
			t.Errorf("ParseCPUTimes(%q) err = %v, want one naming /proc/stat", bad, err)
		}
	}
}

func TestBusy(t *testing.T) {
	before := CPUTimes{Busy: 100, Total: 1000}
	for _, c := range []struct {
		after CPUTimes
		want  float64
	}{
		{CPUTimes{Busy: 150, Total: 1200}, 0.25},
		{CPUTimes{Busy: 300, Total: 1200}, 1},
		{CPUTimes{Busy: 100, Total: 1000}, 0}, // no time passed
		{CPUTimes{Busy: 10, Total: 100}, 0},   // counters went back
	} {
		if got := Busy(before, c.after); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Busy(%+v, %+v) = %v, want %v", before, c.after, got, c.want)
		}
	}
}

func TestWaitQuietReadsThisMachine(t *testing.T) {
	// A limit of zero returns after one window, with that window's
	// reading: a real fraction of this machine's CPU time.
	waited, busy, err := WaitQuiet(-1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if waited < QuietWindow || busy < 0 || busy > 1 {
		t.Fatalf("WaitQuiet(-1, 0) = %v, %v: want one window of at least %v and a fraction in [0, 1]", waited, busy, QuietWindow)
	}
}
