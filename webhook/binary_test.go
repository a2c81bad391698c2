package webhook_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/pkg/certs"
	"podnet.io/podnet/test/testenv"
	"podnet.io/podnet/webhook"
)

// process is the real podnet-webhook binary running against an env.
type process struct {
	cmd     *exec.Cmd
	probe   string    // http://host:port of /healthz and /readyz
	metrics string    // http://host:port/metrics
	serving string    // host:port of the webhook's HTTPS server
	started time.Time // when the process started
	proc    *testenv.Process
}

// syncBuffer is a log buffer the process writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startBinary builds podnet-webhook, runs it as the API server's webhook
// (the env must have been started with deploy/webhook installed) with the
// signing key at keyPath and the serving pair in certDir (empty: envtest's),
// and any extra flags, and stops it by PID when the test ends.
func startBinary(t testing.TB, env *testenv.Env, keyPath, certDir string, extra ...string) *process {
	t.Helper()
	return startBinaryEnv(t, env, keyPath, certDir, nil, extra...)
}

// startBinaryEnv is startBinary with environ added to the test's own
// environment (later entries win), as a Deployment's env would set it.
func startBinaryEnv(t testing.TB, env *testenv.Env, keyPath, certDir string, environ []string, extra ...string) *process {
	t.Helper()
	bin := webhook.BuildCommand(t, "./cmd/podnet-webhook")
	kubeconfig := env.AdminKubeconfig(t, "podnet-webhook")
	wio := env.Env.WebhookInstallOptions
	if certDir == "" {
		certDir = wio.LocalServingCertDir
	}
	probe, metricsAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	logs := &syncBuffer{}
	cmd := exec.Command(bin,
		"--kubeconfig="+kubeconfig,
		"--port="+strconv.Itoa(wio.LocalServingPort),
		"--cert-dir="+certDir,
		"--signing-key="+keyPath,
		"--health-probe-bind-address="+probe,
		"--metrics-bind-address="+metricsAddr,
	)
	cmd.Args = append(cmd.Args, extra...)
	if environ != nil {
		cmd.Env = append(os.Environ(), environ...)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	started := time.Now()
	proc := testenv.StartProcess(t, cmd, 10*time.Second, func() {
		t.Logf("podnet-webhook log:\n%s", logs.String())
	})
	return &process{proc: proc, cmd: cmd, probe: "http://" + probe, metrics: "http://" + metricsAddr + "/metrics", started: started, serving: net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort))}
}

// TestBinaryIsReadyOnlyWithItsKey runs the real podnet-webhook: alive but
// not ready while its signing key is missing, ready once the key file
// appears, then approving pods and ResourceClaims through the API server,
// and serving a rotated certificate without a restart.
func TestBinaryIsReadyOnlyWithItsKey(t *testing.T) {
	// Its own API server: the binary serves the cluster-wide webhook configuration with a certificate the test rotates.
	env := testenv.Start(t, testenv.Options{WebhookInstallOptions: envtest.WebhookInstallOptions{
		Paths: []string{filepath.Join(testenv.RepoRoot(t), "deploy", "webhook")},
	}})
	dir := t.TempDir()
	key, pub := filepath.Join(dir, "approval.key"), filepath.Join(dir, "approval.pub")
	// The serving pair starts as envtest's (the API server trusts its CA)
	// in a folder of the test's own, so that a rotation can be written.
	certDir := t.TempDir()
	for _, f := range []string{"tls.crt", "tls.key"} {
		data, err := os.ReadFile(filepath.Join(env.Env.WebhookInstallOptions.LocalServingCertDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(certDir, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := startBinary(t, env, key, certDir)
	h := &harness{env: env}

	testenv.Eventually(t, 120*time.Second, "podnet-webhook alive", func(ctx context.Context) error {
		_, err := h.get(ctx, p.probe+"/healthz")
		return err
	})
	// The informers sync within moments; the key never comes by itself.
	testenv.Eventually(t, 30*time.Second, "informers synced", func(ctx context.Context) error {
		_, err := h.get(ctx, p.probe+"/readyz/informers")
		return err
	})
	body, err := h.get(context.Background(), p.probe+"/readyz")
	if err == nil || !strings.Contains(body, "signing-key failed") {
		t.Fatalf("ready without a signing key: %v %s", err, body)
	}

	if err := certs.GenerateKeyPair(key, pub); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "podnet-webhook ready", func(ctx context.Context) error {
		_, err := h.get(ctx, p.probe+"/readyz")
		return err
	})

	h.createNamespace(t, "t1", map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"})
	if err := env.Client.Create(context.Background(), webhook.TelcoProfile()); err != nil {
		t.Fatal(err)
	}
	verifier, err := certs.LoadVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	// The binary's cache sees the new profile a moment after the API
	// server stored it; until then the pod is (rightly) denied.
	testenv.Eventually(t, 30*time.Second, "pod approved by the binary", func(ctx context.Context) error {
		pod := pod("t1", "p", map[string]string{v1alpha1.NetworksAnnotation: "data"})
		if err := env.Client.Create(ctx, pod); err != nil {
			return err
		}
		_, err := approval.VerifyPod(verifier, pod)
		if len(pod.Spec.InitContainers) != 1 || pod.Spec.InitContainers[0].Image != webhook.DefaultWaitImage {
			t.Errorf("init containers %+v", pod.Spec.InitContainers)
		}
		return err
	})
	// The binary serves ResourceClaims too (ClaimPath), with the same key.
	claim := apiClaim("t1", "data.telco-data", `{"mtu":9000}`)
	if err := env.Client.Create(context.Background(), claim); err != nil {
		t.Fatalf("claim through the binary: %v", err)
	}
	if _, err := approval.VerifyClaim(verifier, claim); err != nil {
		t.Errorf("claim approved by the binary: %v", err)
	}

	// The metrics endpoint serves the decisions, the admission server's
	// requests, the API client's requests and the runtime's memory and CPU.
	metrics, err := h.get(context.Background(), p.metrics)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"podnet_webhook_decisions_total{", "controller_runtime_webhook_requests_total{", "rest_client_requests_total{", "go_memstats_heap_inuse_bytes ", "process_cpu_seconds_total "} {
		if !strings.Contains(metrics, "\n"+name) {
			t.Errorf("metrics lack %s", name)
		}
	}

	// A rotated serving pair is served without a restart.
	certPEM, keyPEM, serial := selfSignedPair(t)
	if err := os.WriteFile(filepath.Join(certDir, "tls.key"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(certDir, "tls.crt"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "rotated serving certificate in use", func(ctx context.Context) error {
		conn, err := tls.Dial("tcp", p.serving, &tls.Config{InsecureSkipVerify: true}) // only the served certificate is read, not trusted
		if err != nil {
			return err
		}
		defer conn.Close()
		if got := conn.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(serial) != 0 {
			return fmt.Errorf("serving serial %s, want %s", got, serial)
		}
		return nil
	})
}

// selfSignedPair is a fresh serving certificate for 127.0.0.1 in PEM.
func selfSignedPair(t testing.TB) (certPEM, keyPEM []byte, serial *big.Int) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial = big.NewInt(time.Now().UnixNano())
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "podnet-webhook rotated"},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), serial
}
