package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"
)

// reviewServer serves Path. controller-runtime's admission.Webhook reads an
// AdmissionReview's body three times (to find its kind, to decode it with
// the pod kept as raw bytes, and then the handler decodes the pod again),
// which the CPU profile of the bench put at nearly half of the webhook's
// time per admission. reviewServer decodes the review and its pods in one
// pass, with the same case-sensitive decoder, and answers through the same
// Handler; any request it does not recognise as a v1 pod review (another
// content type, a missing object, a body that does not decode) goes to
// controller-runtime's handler unchanged, so odd input is answered as
// before (FuzzReviewServer). One difference remains, for a body no API
// server writes: a repeated "object" key is merged here, where
// controller-runtime keeps the last one; either way the answer is the
// decision for a pod the sender wrote, with no side effect.
type reviewServer struct {
	handler  *Handler
	fallback http.Handler
}

// maxReviewSize is controller-runtime's limit on a request body; a larger
// body goes to its handler, which refuses it.
const maxReviewSize = 7 << 20

// reviewBuffers are reused request and response bodies.
var reviewBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// decodedReview is a v1 AdmissionReview whose pods are decoded along with
// it: the outer Object and OldObject hide the embedded request's raw ones.
type decodedReview struct {
	metav1.TypeMeta `json:",inline"`
	Request         *struct {
		admissionv1.AdmissionRequest `json:",inline"`
		Object                       *corev1.Pod `json:"object"`
		OldObject                    *corev1.Pod `json:"oldObject"`
	} `json:"request"`
}

func newReviewServer(h *Handler) *reviewServer {
	return &reviewServer{handler: h, fallback: &admission.Webhook{Handler: h, RecoverPanic: ptr.To(true)}}
}

func (s *reviewServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := reviewBuffers.Get().(*bytes.Buffer)
	defer reviewBuffers.Put(body)
	body.Reset()
	if r.Body != nil {
		defer r.Body.Close()
		if _, err := body.ReadFrom(io.LimitReader(r.Body, maxReviewSize+1)); err != nil {
			http.Error(w, fmt.Sprintf("read admission review: %v", err), http.StatusBadRequest)
			return
		}
	}
	req, d, ok := decodeReview(r.Header.Get("Content-Type"), body.Bytes())
	if !ok {
		r.Body = io.NopCloser(bytes.NewReader(body.Bytes()))
		s.fallback.ServeHTTP(w, r)
		return
	}
	patch := reviewBuffers.Get().(*bytes.Buffer)
	defer reviewBuffers.Put(patch)
	patch.Reset()
	resp := s.answer(r.Context(), req, d, patch)
	out := reviewBuffers.Get().(*bytes.Buffer)
	defer reviewBuffers.Put(out)
	out.Reset()
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: &resp.AdmissionResponse,
	}
	if err := json.NewEncoder(out).Encode(review); err != nil {
		http.Error(w, fmt.Sprintf("encode admission response: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out.Bytes()) // the API server sees a broken connection itself
}

// decodeReview decodes a v1 pod AdmissionReview in one pass; ok is false
// for anything else.
func decodeReview(contentType string, body []byte) (admission.Request, decoded, bool) {
	var review decodedReview
	if contentType != "application/json" || len(body) > maxReviewSize ||
		sigsjson.UnmarshalCaseSensitivePreserveInts(body, &review) != nil ||
		review.APIVersion != admissionv1.SchemeGroupVersion.String() || review.Kind != "AdmissionReview" ||
		review.Request == nil || review.Request.Object == nil ||
		(review.Request.Operation == admissionv1.Update && review.Request.OldObject == nil) {
		return admission.Request{}, decoded{}, false
	}
	return admission.Request{AdmissionRequest: review.Request.AdmissionRequest},
		decoded{pod: review.Request.Object, old: review.Request.OldObject}, true
}

// answer is the handler's response, completed as controller-runtime
// completes it (UID, status code, JSON patch), and a panic recovered into
// an error as controller-runtime recovers it. The JSON patch is written
// into patch, which must outlive the response's encoding.
func (s *reviewServer) answer(ctx context.Context, req admission.Request, d decoded, patch *bytes.Buffer) (resp admission.Response) {
	defer func() {
		if r := recover(); r != nil {
			resp = admission.Errored(http.StatusInternalServerError, fmt.Errorf("panic: %v [recovered]", r))
			resp.UID = req.UID
		}
	}()
	resp = s.handler.handle(ctx, req, d)
	// Complete encodes the patch with json.Marshal, which compacts again
	// what each op's MarshalJSON returns: a second pass over the wait
	// container and the approval that the CPU profile put at a tenth of
	// the webhook's time per admission. The ops are encoded here in one
	// pass, to the same bytes (TestPatchJSONIsJSONMarshal).
	ops := resp.Patches
	resp.Patches = nil
	err := resp.Complete(req)
	if err == nil && len(ops) > 0 {
		resp.Patch, err = patchJSON(patch, ops)
		resp.PatchType = ptr.To(admissionv1.PatchTypeJSONPatch)
	}
	if err != nil {
		resp = admission.Errored(http.StatusInternalServerError, fmt.Errorf("encode the response: %w", err))
		resp.UID = req.UID
	}
	return resp
}

// patchJSON writes json.Marshal(ops) into b in one pass and returns b's
// bytes: each op as its MarshalJSON spells it (a value that is null on add
// and replace is written, other absent values are left out), escaped as
// json.Marshal escapes.
func patchJSON(b *bytes.Buffer, ops []jsonpatch.JsonPatchOperation) ([]byte, error) {
	enc := json.NewEncoder(b)
	b.WriteByte('[')
	for i, op := range ops {
		if i > 0 {
			b.WriteByte(',')
		}
		var v any = patchOpOmitted{Operation: op.Operation, Path: op.Path, Value: op.Value}
		if op.Value == nil && (op.Operation == "add" || op.Operation == "replace") {
			v = patchOpNull{Operation: op.Operation, Path: op.Path}
		}
		if err := enc.Encode(v); err != nil {
			return nil, fmt.Errorf("encode patch op %s %s: %w", op.Operation, op.Path, err)
		}
		b.Truncate(b.Len() - 1) // Encode ends each value with a newline
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// patchOpOmitted and patchOpNull are jsonpatch.Operation's two spellings.
type patchOpOmitted struct {
	Operation string `json:"op"`
	Path      string `json:"path"`
	Value     any    `json:"value,omitempty"`
}

type patchOpNull struct {
	Operation string `json:"op"`
	Path      string `json:"path"`
	Value     any    `json:"value"`
}
