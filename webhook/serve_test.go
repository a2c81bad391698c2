package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"podnet.io/podnet/api/v1alpha1"
)

// TestReviewServerAnswersAsControllerRuntime sends the same HTTP requests
// to reviewServer and to controller-runtime's admission.Webhook around the
// same Handler: the status and response bodies must be the same bytes,
// and pod reviews must take the one-pass decode rather than the fallback.
func TestReviewServerAnswersAsControllerRuntime(t *testing.T) {
	f := newFixture(t)
	s := newReviewServer(f.h)
	approvedPod := testPod(map[string]string{v1alpha1.NetworksAnnotation: "data"})
	approved := created(applyPatch(t, createRequest(t, approvedPod), f.h.Handle(context.Background(), createRequest(t, approvedPod))))
	changed := approved.DeepCopy()
	changed.Annotations[v1alpha1.NetworksAnnotation] = `[{"name":"data","vlan":120}]`
	forged := approved.DeepCopy()
	forged.Annotations[v1alpha1.NetworkStatusAnnotation] = "[]"
	notAPod := createRequest(t, testPod(nil))
	notAPod.Kind = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	malformed := createRequest(t, testPod(nil))
	malformed.Object.Raw = []byte(`[]`)
	noObject := createRequest(t, testPod(nil))
	noObject.Object.Raw = nil
	updateWithoutOld := updateRequest(t, approved, changed)
	updateWithoutOld.OldObject.Raw = nil

	review := func(req admission.Request) string {
		b, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request:  &req.AdmissionRequest,
		})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, c := range []struct {
		name, contentType, body string
		fast                    bool
	}{
		{"create approved", "application/json", review(createRequest(t, approvedPod)), true},
		{"create denied", "application/json", review(createRequest(t, testPod(map[string]string{v1alpha1.NetworksAnnotation: "other"}))), true},
		{"create asks nothing", "application/json", review(createRequest(t, testPod(nil))), true},
		{"update re-approved", "application/json", review(updateRequest(t, approved, changed)), true},
		{"update forging the status", "application/json", review(updateRequest(t, approved, forged)), true},
		{"not a pod", "application/json", review(notAPod), true},
		{"object not a pod object", "application/json", review(malformed), false},
		{"no object", "application/json", review(noObject), false},
		{"update without the old object", "application/json", review(updateWithoutOld), false},
		{"v1beta1 review", "application/json", `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u1"}}`, false},
		{"no request", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, false},
		{"not JSON", "application/json", `{`, false},
		{"empty body", "application/json", ``, false},
		{"other content type", "text/plain", review(createRequest(t, approvedPod)), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, _, fast := decodeReview(c.contentType, []byte(c.body)); fast != c.fast {
				t.Errorf("one-pass decode taken: %v, want %v", fast, c.fast)
			}
			serve := func(h http.Handler) *httptest.ResponseRecorder {
				r := httptest.NewRequest(http.MethodPost, Path, bytes.NewBufferString(c.body))
				r.Header.Set("Content-Type", c.contentType)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w
			}
			got, want := serve(s), serve(s.fallback)
			if got.Code != want.Code || got.Body.String() != want.Body.String() {
				t.Errorf("reviewServer answered %d %s\ncontroller-runtime %d %s", got.Code, got.Body, want.Code, want.Body)
			}
			// controller-runtime leaves the type to be sniffed; the review
			// is JSON, and says so.
			if ct := got.Header().Get("Content-Type"); c.fast && ct != "application/json" {
				t.Errorf("content type %q, want application/json", ct)
			}
		})
	}
}

// FuzzReviewServer: whatever the body, reviewServer answers what
// controller-runtime's handler answers.
func FuzzReviewServer(f *testing.F) {
	f.Add(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"Pod"},"operation":"CREATE","namespace":"t1","object":{"metadata":{"name":"p","annotations":{"podnet.io/networks":"data"}}}}}`)
	f.Add(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"Pod"},"operation":"UPDATE","namespace":"t1","object":{"metadata":{"name":"p"}},"oldObject":{"metadata":{"name":"p","annotations":{"podnet.io/approved":"x"}}}}}`)
	f.Add(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"Pod"},"operation":"CREATE","object":{"Metadata":{"namespace":"t2"}}}}`)
	f.Add(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"object":[]}}`)
	fx := newFixture(&testing.T{})
	s := newReviewServer(fx.h)
	f.Fuzz(func(t *testing.T, body string) {
		serve := func(h http.Handler) *httptest.ResponseRecorder {
			r := httptest.NewRequest(http.MethodPost, Path, bytes.NewBufferString(body))
			r.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			return w
		}
		got, want := serve(s), serve(s.fallback)
		if got.Code != want.Code || got.Body.String() != want.Body.String() {
			t.Fatalf("%q:\nreviewServer answered %d %s\ncontroller-runtime %d %s", body, got.Code, got.Body, want.Code, want.Body)
		}
	})
}

// TestPatchJSONIsJSONMarshal: the review server's patch encoding gives
// the bytes controller-runtime's json.Marshal of the ops gives, for every
// spelling of an op: a value, a null value on add and replace, no value
// on remove, characters json.Marshal escapes.
func TestPatchJSONIsJSONMarshal(t *testing.T) {
	for _, ops := range [][]jsonpatch.JsonPatchOperation{
		{{Operation: "add", Path: "/metadata/annotations/podnet.io~1approved", Value: `{"a":"<b>&c</b>","d":"\u2028é"}`}},
		{{Operation: "add", Path: "/spec/initContainers", Value: []corev1.Container{{Name: "w", Args: []string{"--x", "a,b"}}}}},
		{{Operation: "add", Path: "/a", Value: nil}, {Operation: "replace", Path: "/b", Value: nil}, {Operation: "remove", Path: "/c"}},
		{{Operation: "remove", Path: "/d", Value: "ignored?"}, {Operation: "test", Path: "/e"}, {Operation: "replace", Path: "/f", Value: map[string]any{"z": 1, "a": []int{}}}},
		{{Operation: "add", Path: "/g", Value: ""}, {Operation: "add", Path: "/h", Value: false}, {Operation: "add", Path: "/i", Value: 0}},
	} {
		want, err := json.Marshal(ops)
		if err != nil {
			t.Fatal(err)
		}
		got, err := patchJSON(new(bytes.Buffer), ops)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("patchJSON(%+v) = %s, json.Marshal %s", ops, got, want)
		}
	}
}
