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
