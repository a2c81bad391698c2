package webhook

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"podnet.io/podnet/api/v1alpha1"
)

// TestCreateClaimPodWithoutAnnotations: a pod whose only network comes
// through a claim template, and that has no annotations at all, gets a
// patch the API server can apply in every hold mode: the annotations map
// is made before a key is added to it.
func TestCreateClaimPodWithoutAnnotations(t *testing.T) {
	class, err := v1alpha1.DeviceClassName("telco-data", "data")
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := resourcev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	tmpl := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "net"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "dp", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class}}}}}}}
	for _, mode := range []v1alpha1.HoldMode{v1alpha1.HoldNRI, v1alpha1.HoldWaitInitContainer} {
		f := newFixture(t)
		f.h.Hold = mode
		f.h.Claims = fake.NewClientBuilder().WithScheme(scheme).WithObjects(tmpl).Build()
		pod := testPod(nil)
		pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "net", ResourceClaimTemplateName: ptr.To("net")}}
		req := createRequest(t, pod)
		resp := f.h.Handle(context.Background(), req)
		if !resp.Allowed {
			t.Fatalf("%s: refused: %s", mode, resp.Result.Message)
		}
		out := applyPatch(t, req, resp)
		held := out.Annotations[requiredPlugins] == v1alpha1.NRIRequiredPluginsValue
		if mode == v1alpha1.HoldWaitInitContainer {
			held = len(out.Spec.InitContainers) == 1 && len(out.Annotations) == 0
		}
		if !held || len(out.Spec.ReadinessGates) != 1 {
			t.Errorf("%s: annotations %v, init containers %d, gates %v; want the pod held and gated", mode, out.Annotations, len(out.Spec.InitContainers), out.Spec.ReadinessGates)
		}
	}
}
