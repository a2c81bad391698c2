package webhook_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/test/testenv"
	"podnet.io/podnet/webhook"
)

// apiClaim is a claim as a template makes it (generateName) for network
// data of profile telco-data, with params as its podnet config, or for
// another driver's class when class is not podnet's.
func apiClaim(namespace, class, params string) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "web-0-net-"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
			{Name: "dp", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class}},
		}}},
	}
	if params != "" {
		c.Spec.Devices.Config = []resourcev1.DeviceClaimConfiguration{{Requests: []string{"dp"}, DeviceConfiguration: resourcev1.DeviceConfiguration{
			Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: v1alpha1.DRADriver, Parameters: runtime.RawExtension{Raw: []byte(params)}}}}}
	}
	return c
}

// TestAPIServerResourceClaims drives ResourceClaims through a real
// kube-apiserver with the generated webhook configuration and podnet's
// claim approval policy: a claim inside the profile is signed and passes
// the agent's check; one beyond it is refused with field and limit; one in
// a namespace not opted in gets no approval and fails the check; its
// approval annotations cannot be edited after create; a copy in another
// namespace fails the check, a copy in an opted-in one is refused; claims
// of other drivers pass untouched.
func TestAPIServerResourceClaims(t *testing.T) {
	// Its own API server: it installs the claim approval policy, a cluster-wide admission policy.
	h := startHarnessWith(t, webhook.Options{Registerer: prometheus.NewRegistry()})
	ctx := context.Background()
	c := h.env.Client
	h.createNamespace(t, "t1", map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"})
	h.createNamespace(t, "t-off", map[string]string{"tenant": "telco"})
	h.createProfile(t, webhook.TelcoProfile())
	installClaimPolicy(t, h)

	class, err := v1alpha1.DeviceClassName("telco-data", "data")
	if err != nil {
		t.Fatal(err)
	}
	signed := apiClaim("t1", class, `{"interface":"dp0","mtu":9000,"ips":["192.168.100.7/24"]}`)
	if err := c.Create(ctx, signed); err != nil {
		t.Fatalf("claim within the profile: %v", err)
	}
	a, err := approval.VerifyClaim(h.verifier, signed)
	if err != nil {
		t.Fatalf("agent's check of %s: %v", signed.Name, err)
	}
	if len(a.Interfaces) != 1 || a.Interfaces[0].Interface != "dp0" || a.Interfaces[0].MTU != 9000 || a.Interfaces[0].Profile != "telco-data" {
		t.Errorf("approved %+v, want dp0 of telco-data with mtu 9000", a.Interfaces)
	}

	for params, parts := range map[string][]string{
		`{"mtu":9200}`:              {"spec.devices.config[0].opaque.parameters.mtu", "9200", "maximum mtu 9000"},
		`{"ips":["10.1.1.1/24"]}`:   {"spec.devices.config[0].opaque.parameters.ips[0]", "10.1.1.1/24", "192.168.100.0/24"},
		`{"interface":"dp0","x":1}`: {"spec.devices.config[0].opaque.parameters.x", "unknown field"},
	} {
		err := c.Create(ctx, apiClaim("t1", class, params))
		if err == nil {
			t.Errorf("claim with %s admitted", params)
			continue
		}
		for _, p := range append(parts, `admission webhook "resourceclaims.podnet.io" denied the request`) {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("denial %q does not name %q", err, p)
			}
		}
	}

	off := apiClaim("t-off", class, `{"mtu":9000}`)
	if err := c.Create(ctx, off); err != nil {
		t.Fatal(err)
	}
	if _, err := approval.VerifyClaim(h.verifier, off); err == nil || len(off.Annotations) > 0 || !strings.Contains(err.Error(), "has no podnet approval") {
		t.Errorf("claim in a namespace not opted in: annotations %v, check %v; want none and a refusal", off.Annotations, err)
	}

	edited := signed.DeepCopy()
	edited.Annotations[v1alpha1.ApprovedAnnotation] = strings.Replace(edited.Annotations[v1alpha1.ApprovedAnnotation], `"mtu":9000`, `"mtu":9100`, 1)
	removed := signed.DeepCopy()
	delete(removed.Annotations, v1alpha1.ApprovedSignatureAnnotation)
	for name, u := range map[string]*resourcev1.ResourceClaim{"edited": edited, "removed": removed} {
		if err := c.Update(ctx, u); err == nil || !strings.Contains(err.Error(), "podnet-claim-approval") {
			t.Errorf("approval %s after create: %v, want the podnet-claim-approval policy's refusal", name, err)
		}
	}
	labelled := signed.DeepCopy()
	labelled.Labels = map[string]string{"app": "web"}
	if err := c.Update(ctx, labelled); err != nil {
		t.Errorf("labelling a signed claim: %v", err)
	}

	copied := apiClaim("t-off", class, `{"interface":"dp0","mtu":9000,"ips":["192.168.100.7/24"]}`)
	copied.Annotations = signed.Annotations
	if err := c.Create(ctx, copied); err != nil {
		t.Fatal(err)
	}
	if _, err := approval.VerifyClaim(h.verifier, copied); err == nil || !strings.Contains(err.Error(), `issued for namespace "t1"`) {
		t.Errorf("claim copied to t-off: check %v, want a refusal naming namespace t1", err)
	}
	again := apiClaim("t1", class, `{"interface":"dp0","mtu":9000,"ips":["192.168.100.7/24"]}`)
	again.Annotations = signed.Annotations
	if err := c.Create(ctx, again); err == nil || !strings.Contains(err.Error(), "only podnet's webhook writes it") {
		t.Errorf("claim created with a copied approval in t1: %v, want the webhook's refusal", err)
	}

	gpu := apiClaim("t1", "gpu.example.com", "")
	gpu.Spec.Devices.Config = []resourcev1.DeviceClaimConfiguration{{Requests: []string{"dp"}, DeviceConfiguration: resourcev1.DeviceConfiguration{
		Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: runtime.RawExtension{Raw: []byte(`{"sharing":"time"}`)}}}}}
	if err := c.Create(ctx, gpu); err != nil || len(gpu.Annotations) > 0 {
		t.Errorf("claim of another driver: %v, annotations %v; want admitted untouched", err, gpu.Annotations)
	}
}

// installClaimPolicy creates deploy/policies/claim-approval.yaml and waits
// until the API server enforces it (it loads policies asynchronously).
func installClaimPolicy(t *testing.T, h *harness) {
	t.Helper()
	ctx := context.Background()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "deploy", "policies", "claim-approval.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if err := h.env.Client.Create(ctx, &u); err != nil {
			t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	probe := apiClaim("t-off", "gpu.example.com", "")
	probe.Annotations = map[string]string{v1alpha1.ApprovedAnnotation: "x", v1alpha1.ApprovedSignatureAnnotation: "y"}
	if err := h.env.Client.Create(ctx, probe); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, "claim approval policy in force", func(ctx context.Context) error {
		p := probe.DeepCopy()
		p.Annotations[v1alpha1.ApprovedAnnotation] = "z"
		err := h.env.Client.Update(ctx, p, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "podnet-claim-approval") {
			return errors.New("an approval edit was not refused yet")
		}
		return nil
	})
}
