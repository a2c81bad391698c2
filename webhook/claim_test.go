package webhook

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	admissionv1 "k8s.io/api/admission/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
)

// testClaim asks for network data of profile telco-data with params as
// its podnet config, beside another driver's device.
func testClaim(params string) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaim"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "t1", GenerateName: "web-0-net-"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
			{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}},
			{Name: "dp", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "data.telco-data"}},
		}}},
	}
	if params != "" {
		c.Spec.Devices.Config = []resourcev1.DeviceClaimConfiguration{{Requests: []string{"dp"}, DeviceConfiguration: resourcev1.DeviceConfiguration{
			Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: v1alpha1.DRADriver, Parameters: runtime.RawExtension{Raw: []byte(params)}}}}}
	}
	return c
}

func claimRequest(t *testing.T, c *resourcev1.ResourceClaim, op admissionv1.Operation) admission.Request {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "u1", Kind: metav1.GroupVersionKind{Group: "resource.k8s.io", Version: "v1", Kind: "ResourceClaim"},
		Resource:  metav1.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceclaims"},
		Namespace: c.Namespace, Operation: op, Object: runtime.RawExtension{Raw: b},
	}}
}

// patchedClaim applies the response's patch and stores the claim as the
// API server would: named, created a second after the approval.
func patchedClaim(t *testing.T, req admission.Request, resp admission.Response) *resourcev1.ResourceClaim {
	t.Helper()
	ops, err := json.Marshal(resp.Patches)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatchapply.DecodePatch(ops)
	if err != nil {
		t.Fatal(err)
	}
	out, err := patch.Apply(req.Object.Raw)
	if err != nil {
		t.Fatal(err)
	}
	c := &resourcev1.ResourceClaim{}
	if err := json.Unmarshal(out, c); err != nil {
		t.Fatal(err)
	}
	c.Name, c.UID, c.CreationTimestamp = "web-0-net-abcde", "claim-uid", metav1.NewTime(fixtureTime.Add(time.Second))
	return c
}

// TestClaimHandler: the handler signs what policy decides onto the claim
// (the agent's check accepts it), refuses a claim beyond the profile with
// the field and the limit and a claim that brings its own approval, leaves
// claims of other drivers untouched, and shows a dry run unsigned; each
// decision is counted by result and profile.
func TestClaimHandler(t *testing.T) {
	f := newFixture(t)
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	f.h.Metrics = m
	h := ClaimHandler{Handler: f.h}
	ctx := context.Background()

	req := claimRequest(t, testClaim(`{"interface":"dp0","mtu":9000,"ips":["192.168.100.7/24"]}`), admissionv1.Create)
	resp := h.Handle(ctx, req)
	if !resp.Allowed {
		t.Fatalf("claim within the profile refused: %s", resp.Result.Message)
	}
	a, err := approval.VerifyClaim(f.verifier(), patchedClaim(t, req, resp))
	if err != nil {
		t.Fatalf("agent's check of the signed claim: %v", err)
	}
	if len(a.Interfaces) != 1 || a.Interfaces[0].Interface != "dp0" || a.Interfaces[0].MTU != 9000 || a.Interfaces[0].IPAM.Static[0] != "192.168.100.7/24" {
		t.Errorf("approval %+v, want dp0 with mtu 9000 and 192.168.100.7/24", a.Interfaces)
	}

	refusals := map[string]struct {
		claim *resourcev1.ResourceClaim
		parts []string
	}{
		"mtu over the limit":         {testClaim(`{"mtu":9200}`), []string{"resourceclaim t1/web-0-net-*", "spec.devices.config[0].opaque.parameters.mtu", "9200", "maximum mtu 9000"}},
		"static ip outside the pool": {testClaim(`{"ips":["10.1.1.1/24"]}`), []string{"spec.devices.config[0].opaque.parameters.ips[0]", "10.1.1.1/24", "192.168.100.0/24"}},
	}
	brought := testClaim("")
	brought.Annotations = map[string]string{v1alpha1.ApprovedAnnotation: "{}", v1alpha1.ApprovedSignatureAnnotation: "x"}
	refusals["approval brought along"] = struct {
		claim *resourcev1.ResourceClaim
		parts []string
	}{brought, []string{"metadata.annotations[podnet.io/approved]", "only podnet's webhook writes it"}}
	for name, tc := range refusals {
		resp := h.Handle(ctx, claimRequest(t, tc.claim, admissionv1.Create))
		if resp.Allowed {
			t.Errorf("%s: allowed", name)
			continue
		}
		for _, p := range tc.parts {
			if !strings.Contains(resp.Result.Message, p) {
				t.Errorf("%s: %q does not name %q", name, resp.Result.Message, p)
			}
		}
	}

	other := testClaim("")
	other.Spec.Devices.Requests = other.Spec.Devices.Requests[:1]
	for name, req := range map[string]admission.Request{
		"other driver's claim": claimRequest(t, other, admissionv1.Create),
		"update":               claimRequest(t, testClaim(`{"mtu":9200}`), admissionv1.Update),
	} {
		if resp := h.Handle(ctx, req); !resp.Allowed || len(resp.Patches) > 0 {
			t.Errorf("%s: allowed %v, patches %v; want allowed untouched", name, resp.Allowed, resp.Patches)
		}
	}

	dry := claimRequest(t, testClaim(""), admissionv1.Create)
	dry.DryRun = ptr.To(true)
	stored := patchedClaim(t, dry, h.Handle(ctx, dry))
	if stored.Annotations[v1alpha1.ApprovedAnnotation] == "" || stored.Annotations[v1alpha1.ApprovedSignatureAnnotation] != "" {
		t.Errorf("dry run annotations %v, want the approval unsigned", stored.Annotations)
	}
	for _, w := range []struct {
		result, profile string
		n               float64
	}{{"approved", "telco-data", 2}, {"denied", "", 3}, {"none", "", 1}, {"ignored", "", 1}} {
		var got dto.Metric
		if err := m.claims.WithLabelValues(w.result, w.profile).Write(&got); err != nil {
			t.Fatal(err)
		}
		if got.GetCounter().GetValue() != w.n {
			t.Errorf("claim decisions %s/%q = %v, want %v", w.result, w.profile, got.GetCounter().GetValue(), w.n)
		}
	}
}
