package localcluster

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
)

// A cluster brought up again under the same name writes a new CA to the
// same file; a client made afterwards in the same process must trust the
// new CA, not the one client-go cached for that file's path.
func TestRESTConfigTrustsTheCAOfAClusterBroughtUpAgain(t *testing.T) {
	dir := t.TempDir()
	pki := filepath.Join(dir, "pki")
	c := &Cluster{Name: "again", Kubeconfig: filepath.Join(dir, "kubeconfig")}
	for round := range 2 {
		if err := ensurePKI(pki, planLayout("again", minIndex, 1)); err != nil {
			t.Fatal(err)
		}
		cert, err := tls.LoadX509KeyPair(filepath.Join(pki, "apiserver.crt"), filepath.Join(pki, "apiserver.key"))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		srv.StartTLS()
		defer srv.Close()
		if err := writeKubeconfig(c.Kubeconfig, srv.URL, filepath.Join(pki, "ca.crt"),
			filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"), "admin"); err != nil {
			t.Fatal(err)
		}
		cs, err := c.clientset() // through RESTConfig, as Up's readiness wait
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(context.Background()).Error(); err != nil {
			t.Fatalf("cluster brought up %d times: /readyz: %v", round+1, err)
		}
	}
}
