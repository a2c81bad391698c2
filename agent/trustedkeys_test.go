package agent

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"podnet.io/podnet/pkg/certs"
)

// TestTrustedKeysReportsABrokenFile: with the agent's real key file
// behind it, the "trusted-keys" readiness check fails naming the file and
// its fault while the file is broken, the stale gauge is 1 and the load
// error counter counts the broken content once, one log line marks each
// change; a good file makes it all well again.
func TestTrustedKeysReportsABrokenFile(t *testing.T) {
	dir := t.TempDir()
	priv, pub := filepath.Join(dir, "approval.key"), filepath.Join(dir, "approval.pub")
	if err := certs.GenerateKeyPair(priv, pub); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(pub)
	if err != nil {
		t.Fatal(err)
	}
	v, err := certs.LoadVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	k := &TrustedKeys{File: v, Log: funcr.New(func(prefix, args string) { logs = append(logs, args) }, funcr.Options{})}
	reg := prometheus.NewRegistry()
	if err := k.Register(reg); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.StripPrefix("/readyz", &healthz.Handler{Checks: map[string]healthz.Checker{"trusted-keys": k.Ready}}))
	defer srv.Close()
	readyz := func() (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/readyz/trusted-keys")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	metric := func(name string) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				m := mf.GetMetric()[0]
				if m.GetGauge() != nil {
					return m.GetGauge().GetValue()
				}
				return m.GetCounter().GetValue()
			}
		}
		t.Fatalf("no metric %s", name)
		return 0
	}

	if code, body := readyz(); code != http.StatusOK || metric("podnet_agent_trusted_keys_stale") != 0 || len(logs) != 0 {
		t.Fatalf("good file: readyz %d %q, stale %v, logs %q", code, body, metric("podnet_agent_trusted_keys_stale"), logs)
	}
	if err := os.WriteFile(pub, []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		code, body := readyz()
		if code != http.StatusInternalServerError || !strings.Contains(body, pub) || !strings.Contains(body, "parse PKIX public key 1") {
			t.Fatalf("broken file: readyz %d %q, want 500 naming the file and its fault", code, body)
		}
	}
	if s, n := metric("podnet_agent_trusted_keys_stale"), metric("podnet_agent_trusted_keys_load_errors_total"); s != 1 || n != 1 {
		t.Fatalf("broken file: stale %v, load errors %v; want 1 and 1", s, n)
	}
	if len(logs) != 1 || !strings.Contains(logs[0], pub) {
		t.Fatalf("logs %q, want one line naming the file", logs)
	}
	if err := os.WriteFile(pub, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, body := readyz(); code != http.StatusOK || metric("podnet_agent_trusted_keys_stale") != 0 || metric("podnet_agent_trusted_keys_load_errors_total") != 1 {
		t.Fatalf("good file again: readyz %d %q, stale %v", code, body, metric("podnet_agent_trusted_keys_stale"))
	}
	if len(logs) != 2 || !strings.Contains(logs[1], "loads again") {
		t.Fatalf("logs %q, want a second line saying the file loads again", logs)
	}
}
