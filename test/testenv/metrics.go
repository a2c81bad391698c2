package testenv

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Metrics returns the API server's /metrics (Prometheus text), for tests
// that count the requests it served.
func (e *Env) Metrics(t testing.TB) string {
	t.Helper()
	c := rest.CopyConfig(e.Config)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		t.Fatalf("client for the API server's metrics: %v", err)
	}
	body, err := rc.Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("API server metrics: %v", err)
	}
	return string(body)
}
