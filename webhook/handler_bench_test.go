//go:build bench

package webhook

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/test/bench"
)

// cachedReader serves one namespace's metadata and a list of profiles as
// the webhook's informer cache does: shared objects, no API server, no
// copies. The bench measures the handler, not a fake client's copies.
type cachedReader struct {
	ns       *metav1.PartialObjectMetadata
	profiles []v1alpha1.NetworkProfile
}

func (r *cachedReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok || key.Name != r.ns.Name {
		return fmt.Errorf("bench reader has no %T %s", obj, key)
	}
	*m = *r.ns
	return nil
}

func (r *cachedReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	l, ok := list.(*v1alpha1.NetworkProfileList)
	if !ok {
		return fmt.Errorf("bench reader lists no %T", list)
	}
	l.Items = r.profiles
	return nil
}

// handlerBenchProfiles are the floor bench's 100 profiles: 99 for other
// tenants and telco's, each offering data and mgmt.
func handlerBenchProfiles() []v1alpha1.NetworkProfile {
	var out []v1alpha1.NetworkProfile
	for i := range 100 {
		name, tenant := fmt.Sprintf("other-%02d", i), fmt.Sprintf("other-%d", i)
		if i == 99 {
			name, tenant = "telco", "telco"
		}
		p := BenchProfile(name, tenant)
		p.Generation = 1
		out = append(out, *p)
	}
	return out
}

// BenchProfile offers networks data and mgmt to namespaces labelled
// tenant=<tenant>: the profile of both webhook benches (exported for the
// floor bench, which runs outside the package).
func BenchProfile(name, tenant string) *v1alpha1.NetworkProfile {
	p := &v1alpha1.NetworkProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.NetworkProfileSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": tenant}},
			MaxInterfaces:     4,
		},
	}
	for i, n := range []string{"data", "mgmt"} {
		p.Spec.Networks = append(p.Spec.Networks, v1alpha1.Network{
			Name: n,
			Bridge: &v1alpha1.BridgeNetwork{
				Name: "pnbr-" + n,
				VLAN: &v1alpha1.VLANPolicy{Default: ptr.To[int32](100), Allowed: []string{"100-199"}},
			},
			MTU:  &v1alpha1.MTURange{Default: ptr.To[int32](1500), Max: ptr.To[int32](9000)},
			IPAM: &v1alpha1.IPAM{Pools: []string{fmt.Sprintf("192.168.%d.0/24", 100+i)}, AllowStatic: true},
		})
	}
	return p
}

// handlerBenchReview is the AdmissionReview the API server sends for the
// floor bench's pod: defaulted as the API server defaults it.
func handlerBenchReview(t testing.TB) []byte {
	t.Helper()
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "bench-0", Namespace: "podnet", UID: "3f0c9d6e-2b61-4a4b-9b8e-4a1c8b0e9f11",
			CreationTimestamp: metav1.NewTime(time.Now()),
			Annotations:       map[string]string{v1alpha1.NetworksAnnotation: `[{"name":"data","vlan":120},{"name":"mgmt"}]`}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "localhost/podnet/busybox:dev", Command: []string{"sleep", "3600"},
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy: corev1.PullIfNotPresent}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
			TerminationGracePeriodSeconds: ptr.To[int64](30), ServiceAccountName: "default",
			SecurityContext: &corev1.PodSecurityContext{}, SchedulerName: corev1.DefaultSchedulerName,
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
			Priority: ptr.To[int32](0), EnableServiceLinks: ptr.To(true), PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority),
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort},
	}
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "0c7e1c4e-8f7a-4c43-9a55-3f0d6f2f9b10", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: "podnet", Name: "bench-0",
			Operation: admissionv1.Create, Object: k8sruntime.RawExtension{Raw: raw},
			UserInfo: authenticationv1.UserInfo{Username: "kubernetes-admin", Groups: []string{"system:masters", "system:authenticated"}}, Options: k8sruntime.RawExtension{Raw: []byte(`{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1"}`)},
			DryRun: ptr.To(false),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// TestBenchHandlerAdmission measures podnet's webhook on its own, as the
// API server's call reaches it but without TLS or the API server: the
// review server decoding a pod CREATE, deciding a two-network request
// among 100 profiles from its prepared profiles, signing and answering
// the patch. It prints the time and allocations per admission.
func TestBenchHandlerAdmission(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	key := NewSigningKey(func() (approval.Signer, error) { return approval.Ed25519Signer{Key: priv}, nil })
	reader := &cachedReader{
		ns: &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: "podnet", Labels: map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"}}},
		profiles: handlerBenchProfiles(),
	}
	h := &Handler{Reader: reader, Signer: key, Wait: WaitOptions{Image: DefaultWaitImage, Timeout: DefaultWaitTimeout},
		profiles: &profileSnapshot{reader: reader}}
	h.profiles.stale.Store(true)
	s := newReviewServer(h)
	body := handlerBenchReview(t)
	serve := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w
	}
	first := serve()
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(first.Body.Bytes(), &review); err != nil || review.Response == nil || !review.Response.Allowed || len(review.Response.Patch) == 0 {
		t.Fatalf("the bench's pod was not approved: %v %s", err, first.Body)
	}
	n := bench.Size(20000, 500)
	for range n / 10 {
		serve()
	}
	took := make([]time.Duration, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		start := time.Now()
		serve()
		took[i] = time.Since(start)
	}
	runtime.ReadMemStats(&after)
	fmt.Printf("BENCH webhook_handler_loadavg_1m %s load\n", bench.LoadAverage())
	fmt.Printf("BENCH webhook_handler_admission_p50 %.1f us\n", float64(bench.Percentile(took, 0.50))/1e3)
	fmt.Printf("BENCH webhook_handler_admission_p99 %.1f us\n", float64(bench.Percentile(took, 0.99))/1e3)
	fmt.Printf("BENCH webhook_handler_admission_allocs %.0f allocs\n", float64(after.Mallocs-before.Mallocs)/float64(n))
	fmt.Printf("BENCH webhook_handler_admission_alloc_bytes %.0f bytes\n", float64(after.TotalAlloc-before.TotalAlloc)/float64(n))
	fmt.Printf("BENCH webhook_handler_response_bytes %d bytes\n", first.Body.Len())
	fmt.Printf("BENCH webhook_handler_patch_bytes %d bytes\n", len(review.Response.Patch))
}
