package webhook_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/webhook"
)

// TestAPIServerVRF drives a tenant's VRF request through a real
// kube-apiserver: a table the profile allows is signed into the approval,
// one it does not allow is denied naming field, value and limit, and the
// CRD refuses a profile that would allow the kernel's own tables.
func TestAPIServerVRF(t *testing.T) {
	// A registry of its own: the test binary's other harness serves the
	// manager's.
	h := startSharedHarnessWith(t, webhook.Options{Registerer: prometheus.NewRegistry()})
	ctx := context.Background()
	c := h.env.Client
	ns := h.testNamespace(t, "t1", map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"})
	prof := webhook.TelcoProfile()
	prof.Spec.Networks[0].VRF = &v1alpha1.VRFPolicy{Tables: []string{"1000-1999"}}
	h.createProfile(t, prof)

	p := pod(ns, "in-vrf", map[string]string{v1alpha1.NetworksAnnotation: `[{"name":"data","vrf":{"vrfname":"red","table":1001}}]`})
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	a, err := approval.VerifyPod(h.verifier, p)
	if err != nil || a == nil {
		t.Fatalf("approval of %s: %v, %v", p.Name, a, err)
	}
	if v := a.Interfaces[0].VRF; v == nil || v.Name != "red" || v.Table != 1001 {
		t.Fatalf("approved vrf %+v, want red table 1001", v)
	}

	err = c.Create(ctx, pod(ns, "other-table", map[string]string{v1alpha1.NetworksAnnotation: `[{"name":"data","vrf":{"vrfname":"red","table":2500}}]`}))
	if err == nil {
		t.Fatal("a pod asking for VRF table 2500 was admitted")
	}
	for _, s := range []string{`admission webhook "pods.podnet.io" denied the request`, "vrf.table", "2500", `profile "telco-data"`, "vrf.tables 1000-1999"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("denial %q does not mention %q", err, s)
		}
	}

	bad := webhook.TelcoProfile()
	bad.Name = "main-table"
	bad.Spec.Networks[0].VRF = &v1alpha1.VRFPolicy{Tables: []string{"200-300"}}
	err = c.Create(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), "must not include 252-255") {
		t.Fatalf("a profile allowing tables 200-300: err = %v, want the CRD's refusal naming 252-255", err)
	}
}
