package webhook

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"podnet.io/podnet/api/v1alpha1"
	image "podnet.io/podnet/hack/image"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/pkg/policy"
)

// The fixtures: namespace t1 (tenant=telco) is selected by profile
// telco-data, which offers the bridge network "data" with VLANs 100-199.

func testNamespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// TelcoProfile offers the bridge network "data" (VLANs 100-199, static
// addresses allowed) to namespaces labelled tenant=telco. It is exported for
// the integration tests in package webhook_test.
func TelcoProfile() *v1alpha1.NetworkProfile {
	return &v1alpha1.NetworkProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "telco-data", Generation: 3},
		Spec: v1alpha1.NetworkProfileSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "telco"}},
			MaxInterfaces:     4,
			Networks: []v1alpha1.Network{{
				Name: "data",
				Bridge: &v1alpha1.BridgeNetwork{
					Name: "pnbr-data",
					VLAN: &v1alpha1.VLANPolicy{Default: ptr.To[int32](100), Allowed: []string{"100-199"}},
				},
				MTU:  &v1alpha1.MTURange{Default: ptr.To[int32](1500), Max: ptr.To[int32](9000)},
				IPAM: &v1alpha1.IPAM{Pools: []string{"192.168.100.0/24"}, Gateways: []string{"192.168.100.1"}, AllowStatic: true},
			}},
		},
	}
}

type fixture struct {
	h    *Handler
	pub  ed25519.PublicKey
	objs []client.Object
	// now is the handler's clock.
	now time.Time
}

// fixtureTime is the handler's clock in the fixtures.
var fixtureTime = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// created is the pod as the API server stores it after a CREATE: with a
// UID and a creation time, one second after the approval was issued.
func created(pod *corev1.Pod) *corev1.Pod {
	p := pod.DeepCopy()
	p.UID = "uid-p"
	p.CreationTimestamp = metav1.NewTime(fixtureTime.Add(time.Second))
	return p
}

func newFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	if objs == nil {
		objs = []client.Object{
			testNamespace("t1", map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"}),
			TelcoProfile(),
		}
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	key := NewSigningKey(func() (approval.Signer, error) { return approval.Ed25519Signer{Key: priv}, nil })
	f := &fixture{now: fixtureTime}
	*f = fixture{
		now: fixtureTime,
		h: &Handler{
			Now:           func() time.Time { return f.now },
			Reader:        fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(),
			Signer:        key,
			Wait:          WaitOptions{Image: DefaultWaitImage, Timeout: DefaultWaitTimeout},
			NamespaceWait: 50 * time.Millisecond,
		},
		pub:  pub,
		objs: objs,
	}
	return f
}

// admitted is a pod as the API server stores it after this webhook
// admitted its CREATE.
func (f *fixture) admitted(t *testing.T, annotations map[string]string) *corev1.Pod {
	t.Helper()
	req := createRequest(t, testPod(annotations))
	return created(applyPatch(t, req, f.h.Handle(context.Background(), req)))
}

// verifier is what the agent holds: the fixture's public key.
func (f *fixture) verifier() approval.Verifier {
	return approval.Ed25519Verifier{Keys: []ed25519.PublicKey{f.pub}}
}

func testPod(annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "t1", Annotations: annotations},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
	}
}

func raw(t *testing.T, pod *corev1.Pod) []byte {
	t.Helper()
	b, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var podKind = metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}

func createRequest(t *testing.T, pod *corev1.Pod) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "u1", Kind: podKind, Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: pod.Namespace, Name: pod.Name, Operation: admissionv1.Create,
		Object: runtime.RawExtension{Raw: raw(t, pod)},
	}}
}

func updateRequest(t *testing.T, old, pod *corev1.Pod) admission.Request {
	req := createRequest(t, pod)
	req.Operation = admissionv1.Update
	req.OldObject = runtime.RawExtension{Raw: raw(t, old)}
	return req
}

// expectedApproval is what policy and approval make of the pod: the
// handler's job is to carry it into the patch unchanged.
func (f *fixture) expectedApproval(t *testing.T, pod *corev1.Pod) (string, string) {
	t.Helper()
	var ns *corev1.Namespace
	var profiles []v1alpha1.NetworkProfile
	for _, o := range f.objs {
		switch o := o.(type) {
		case *corev1.Namespace:
			if o.Name == pod.Namespace {
				ns = o
			}
		case *v1alpha1.NetworkProfile:
			profiles = append(profiles, *o)
		}
	}
	a, errs := policy.Decide(policy.Input{Namespace: ns, Pod: pod, Profiles: profiles})
	if len(errs) > 0 {
		t.Fatalf("fixture pod is denied: %v", errs)
	}
	a.IssuedAt = metav1.NewTime(f.now.Truncate(time.Second))
	a.PodUID = string(pod.UID)
	payload, sig, err := approval.Sign(f.h.Signer, a)
	if err != nil {
		t.Fatal(err)
	}
	return payload, sig
}

// applyPatch applies a response's patch to the request's pod.
func applyPatch(t *testing.T, req admission.Request, resp admission.Response) *corev1.Pod {
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
		t.Fatalf("apply %s: %v", ops, err)
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(out, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

func wantPatches(t *testing.T, resp admission.Response, want []jsonpatch.JsonPatchOperation) {
	t.Helper()
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	if !reflect.DeepEqual(resp.Patches, want) {
		got, _ := json.MarshalIndent(resp.Patches, "", " ")
		exp, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("patches:\n%s\nwant:\n%s", got, exp)
	}
}

func wantDenied(t *testing.T, resp admission.Response, substrings ...string) {
	t.Helper()
	if resp.Allowed {
		t.Fatalf("allowed, want denied; patches %v", resp.Patches)
	}
	if resp.Result == nil || resp.Result.Code != http.StatusForbidden {
		t.Fatalf("want a denial (403), got %+v", resp.Result)
	}
	for _, s := range substrings {
		if !strings.Contains(resp.Result.Message, s) {
			t.Errorf("denial %q does not mention %q", resp.Result.Message, s)
		}
	}
}

// approvedPatches are the patches of a created pod of testPod's shape
// whose request is approved: the approval, its signature, the readiness
// gate and NET_RAW dropped from its container.
func approvedPatches(payload, sig string) []jsonpatch.JsonPatchOperation {
	return []jsonpatch.JsonPatchOperation{
		{Operation: "add", Path: "/metadata/annotations/podnet.io~1approved", Value: payload},
		{Operation: "add", Path: "/metadata/annotations/podnet.io~1approved-signature", Value: sig},
		{Operation: "add", Path: "/spec/readinessGates", Value: []corev1.PodReadinessGate{{ConditionType: v1alpha1.NetworksReadyCondition}}},
		dropNetRawOp("/spec/containers/0/securityContext"),
	}
}

func TestCreateApprovedGetsApprovalGateAndWaitContainer(t *testing.T) {
	f := newFixture(t)
	pod := testPod(map[string]string{v1alpha1.NetworksAnnotation: "data"})
	req := createRequest(t, pod)
	resp := f.h.Handle(context.Background(), req)
	payload, sig := f.expectedApproval(t, pod)
	wantPatches(t, resp, append(approvedPatches(payload, sig),
		jsonpatch.JsonPatchOperation{Operation: "add", Path: "/spec/initContainers", Value: []corev1.Container{waitContainer(f.h.Wait, &corev1.Pod{}, []string{"net1"})}}))

	// The patched pod carries an approval the agent accepts.
	out := applyPatch(t, req, resp)
	a, err := approval.VerifyPod(f.verifier(), created(out))
	if err != nil {
		t.Fatalf("agent would refuse the approval: %v", err)
	}
	if len(a.Interfaces) != 1 || a.Interfaces[0].Interface != "net1" || a.Interfaces[0].Bridge != "pnbr-data" || a.Interfaces[0].VLAN != 100 {
		t.Errorf("approval %+v", a)
	}
	if got := out.Spec.InitContainers[0].Args; !reflect.DeepEqual(got, []string{"--interfaces", "net1", "--timeout", "5m0s"}) {
		t.Errorf("wait args %q", got)
	}

	// A second pass over the patched pod changes nothing, even a few
	// seconds later.
	f.now = f.now.Add(3 * time.Second)
	again := f.h.Handle(context.Background(), createRequest(t, out))
	wantPatches(t, again, nil)
}

func TestCreatePutsWaitContainerFirst(t *testing.T) {
	f := newFixture(t)
	pod := testPod(map[string]string{v1alpha1.NetworksAnnotation: "data, data@fast"})
	pod.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "setup:1"}}
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/other"}}
	req := createRequest(t, pod)
	resp := f.h.Handle(context.Background(), req)
	payload, sig := f.expectedApproval(t, pod)
	wantPatches(t, resp, []jsonpatch.JsonPatchOperation{
		{Operation: "add", Path: "/metadata/annotations/podnet.io~1approved", Value: payload},
		{Operation: "add", Path: "/metadata/annotations/podnet.io~1approved-signature", Value: sig},
		{Operation: "add", Path: "/spec/readinessGates/-", Value: corev1.PodReadinessGate{ConditionType: v1alpha1.NetworksReadyCondition}},
		dropNetRawOp("/spec/containers/0/securityContext"),
		dropNetRawOp("/spec/initContainers/0/securityContext"),
		{Operation: "add", Path: "/spec/initContainers/0", Value: waitContainer(f.h.Wait, &corev1.Pod{}, []string{"net1", "fast"})},
	})
	out := applyPatch(t, req, resp)
	if names := []string{out.Spec.InitContainers[0].Name, out.Spec.InitContainers[1].Name}; !reflect.DeepEqual(names, []string{v1alpha1.WaitContainerName, "setup"}) {
		t.Errorf("init containers %v", names)
	}
	wantPatches(t, f.h.Handle(context.Background(), createRequest(t, out)), nil)
}

func TestCreateWaitOptOut(t *testing.T) {
	f := newFixture(t)
	pod := testPod(map[string]string{v1alpha1.NetworksAnnotation: "data", v1alpha1.WaitAnnotation: "false"})
	resp := f.h.Handle(context.Background(), createRequest(t, pod))
	payload, sig := f.expectedApproval(t, pod)
	wantPatches(t, resp, approvedPatches(payload, sig))
}

func TestCreateReplacesForgedWaitContainer(t *testing.T) {
	f := newFixture(t)
	pod := testPod(map[string]string{v1alpha1.NetworksAnnotation: "data"})
	pod.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "setup:1"}, {Name: v1alpha1.WaitContainerName, Image: "evil:1"}}
	resp := f.h.Handle(context.Background(), createRequest(t, pod))
	if len(resp.Patches) != 6 || !reflect.DeepEqual(resp.Patches[5], jsonpatch.JsonPatchOperation{
		Operation: "replace", Path: "/spec/initContainers/1", Value: waitContainer(f.h.Wait, &corev1.Pod{}, []string{"net1"}),
	}) {
		t.Fatalf("patches %+v", resp.Patches)
	}
}

func TestCopiedApprovalIsReplacedOrRemoved(t *testing.T) {
	f := newFixture(t)
	copied := map[string]string{v1alpha1.ApprovedAnnotation: `{"namespace":"t1"}`, v1alpha1.ApprovedSignatureAnnotation: "AAAA"}

	// No request: refused (TestCreateRefusesApprovalWithoutRequest).
	pod := testPod(map[string]string{v1alpha1.ApprovedAnnotation: copied[v1alpha1.ApprovedAnnotation], v1alpha1.ApprovedSignatureAnnotation: "AAAA"})
	wantDenied(t, f.h.Handle(context.Background(), createRequest(t, pod)), "asks for no network")

	// With a request: the approval is derived again and replaces the copy.
	pod = testPod(map[string]string{v1alpha1.NetworksAnnotation: "data", v1alpha1.ApprovedAnnotation: copied[v1alpha1.ApprovedAnnotation], v1alpha1.ApprovedSignatureAnnotation: "AAAA"})
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: v1alpha1.NetworksReadyCondition}}
	payload, sig := f.expectedApproval(t, pod)
	resp := f.h.Handle(context.Background(), createRequest(t, pod))
	wantPatches(t, resp, []jsonpatch.JsonPatchOperation{
		{Operation: "replace", Path: "/metadata/annotations/podnet.io~1approved", Value: payload},
		{Operation: "replace", Path: "/metadata/annotations/podnet.io~1approved-signature", Value: sig},
		dropNetRawOp("/spec/containers/0/securityContext"),
		{Operation: "add", Path: "/spec/initContainers", Value: []corev1.Container{waitContainer(f.h.Wait, &corev1.Pod{}, []string{"net1"})}},
	})

	// A blank request asks for nothing: refused with an approval too.
	pod = testPod(map[string]string{v1alpha1.NetworksAnnotation: " ", v1alpha1.ApprovedSignatureAnnotation: "AAAA"})
	wantDenied(t, f.h.Handle(context.Background(), createRequest(t, pod)), "asks for no network")
}

func TestCreateDeniedNamesNetworkFieldValueLimitAndOffer(t *testing.T) {
	f := newFixture(t)
	pod := testPod(map[string]string{v1alpha1.NetworksAnnotation: `[{"name":"data","vlan":300}]`})
	resp := f.h.Handle(context.Background(), createRequest(t, pod))
	wantDenied(t, resp, "t1/p", "vlan", "300", `"telco-data"`, "100-199", `may use: data`)
}

func TestMalformedInputIsDenied(t *testing.T) {
	f := newFixture(t)
	cases := map[string]admission.Request{
		"bad request syntax": createRequest(t, testPod(map[string]string{v1alpha1.NetworksAnnotation: `[{"name":`})),
		"unknown network":    createRequest(t, testPod(map[string]string{v1alpha1.NetworksAnnotation: "nope"})),
		"bad wait value":     createRequest(t, testPod(map[string]string{v1alpha1.NetworksAnnotation: "data", v1alpha1.WaitAnnotation: "no"})),
	}
	bad := createRequest(t, testPod(nil))
	bad.Object.Raw = []byte(`{"metadata":{"annotations":{"podnet.io/networks":5}}}`)
	cases["not a pod object"] = bad
	empty := createRequest(t, testPod(nil))
	empty.Object.Raw = nil
	cases["no object"] = empty
	app := testPod(map[string]string{v1alpha1.NetworksAnnotation: "data"})
	app.Spec.Containers[0].Name = v1alpha1.WaitContainerName
	cases["reserved container name"] = createRequest(t, app)
	elsewhere := createRequest(t, testPod(map[string]string{v1alpha1.NetworksAnnotation: "data"}))
	elsewhere.Namespace = "t2"
	cases["object and request namespaces differ"] = elsewhere
	for name, req := range cases {
		t.Run(name, func(t *testing.T) {
			wantDenied(t, f.h.Handle(context.Background(), req))
		})
	}
	t.Run("bad wait value names the field", func(t *testing.T) {
		wantDenied(t, f.h.Handle(context.Background(), cases["bad wait value"]), "metadata.annotations[podnet.io/wait]", `"no"`, `"false"`)
	})
}

func TestUpdateReapprovesChangedRequestWithoutTouchingSpec(t *testing.T) {
	f := newFixture(t)
	old := testPod(map[string]string{v1alpha1.NetworksAnnotation: "data"})
	first := f.h.Handle(context.Background(), createRequest(t, old))
	old = created(applyPatch(t, createRequest(t, old), first))

	pod := old.DeepCopy()
	pod.Annotations[v1alpha1.NetworksAnnotation] = `[{"name":"data","vlan":120,"mtu":9000}]`
	payload, sig := f.expectedApproval(t, pod)
	resp := f.h.Handle(context.Background(), updateRequest(t, old, pod))
	wantPatches(t, resp, []jsonpatch.JsonPatchOperation{
		{Operation: "replace", Path: "/metadata/annotations/podnet.io~1approved", Value: payload},
		{Operation: "replace", Path: "/metadata/annotations/podnet.io~1approved-signature", Value: sig},
	})
	a, err := approval.VerifyPod(f.verifier(), applyPatch(t, updateRequest(t, old, pod), resp))
	if err != nil || a.Interfaces[0].VLAN != 120 || a.Interfaces[0].MTU != 9000 || a.PodUID != "uid-p" {
		t.Fatalf("re-approval %+v, %v", a, err)
	}

	// A pod created without networks may ask later; its spec stays as it
	// was, because the API server forbids adding gates or init containers.
	// (It drops NET_RAW itself: TestUpdateAttachRefusedWhileNetRawHeld.)
	bare := created(testPod(nil))
	bare.Spec.Containers[0].SecurityContext = withCaps("", policy.CapNetRaw)
	later := bare.DeepCopy()
	later.Annotations = map[string]string{v1alpha1.NetworksAnnotation: "data"}
	payload, sig = f.expectedApproval(t, later)
	wantPatches(t, f.h.Handle(context.Background(), updateRequest(t, bare, later)), []jsonpatch.JsonPatchOperation{
		{Operation: "add", Path: "/metadata/annotations/podnet.io~1approved", Value: payload},
		{Operation: "add", Path: "/metadata/annotations/podnet.io~1approved-signature", Value: sig},
	})
}

func TestUpdateRemovedRequestRemovesApproval(t *testing.T) {
	f := newFixture(t)
	old := testPod(map[string]string{v1alpha1.NetworksAnnotation: "data"})
	old = applyPatch(t, createRequest(t, old), f.h.Handle(context.Background(), createRequest(t, old)))
	pod := old.DeepCopy()
	delete(pod.Annotations, v1alpha1.NetworksAnnotation)
	wantPatches(t, f.h.Handle(context.Background(), updateRequest(t, old, pod)), []jsonpatch.JsonPatchOperation{
		{Operation: "remove", Path: "/metadata/annotations/podnet.io~1approved"},
		{Operation: "remove", Path: "/metadata/annotations/podnet.io~1approved-signature"},
	})
}

func TestUpdateEditingPodnetAnnotationsIsDenied(t *testing.T) {
	f := newFixture(t)
	old := f.admitted(t, map[string]string{v1alpha1.NetworksAnnotation: "data"})
	old.Annotations[v1alpha1.NetworkStatusAnnotation] = `[{"name":"t1/data","interface":"net1"}]`
	edits := map[string]func(p *corev1.Pod){
		"edit approval": func(p *corev1.Pod) {
			p.Annotations[v1alpha1.ApprovedAnnotation] = strings.Replace(p.Annotations[v1alpha1.ApprovedAnnotation], `"vlan":100`, `"vlan":4000`, 1)
		},
		"remove signature": func(p *corev1.Pod) { delete(p.Annotations, v1alpha1.ApprovedSignatureAnnotation) },
		"edit status":      func(p *corev1.Pod) { p.Annotations[v1alpha1.NetworkStatusAnnotation] = "[]" },
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			pod := old.DeepCopy()
			edit(pod)
			wantDenied(t, f.h.Handle(context.Background(), updateRequest(t, old, pod)), "t1/p", "written only by podnet")
		})
	}
	bare := created(testPod(map[string]string{v1alpha1.NetworksAnnotation: "data"}))
	forged := bare.DeepCopy()
	forged.Annotations[v1alpha1.NetworkStatusAnnotation] = "[]"
	wantDenied(t, f.h.Handle(context.Background(), updateRequest(t, bare, forged)), v1alpha1.NetworkStatusAnnotation)
}

func TestDryRunGetsNoSignature(t *testing.T) {
	f := newFixture(t)
	pod := testPod(map[string]string{v1alpha1.NetworksAnnotation: "data"})
	req := createRequest(t, pod)
	req.DryRun = ptr.To(true)
	resp := f.h.Handle(context.Background(), req)
	out := applyPatch(t, req, resp)
	// Shown as it would be (the resolved approval, the gate, the wait
	// container), but unsigned: nothing an agent accepts.
	if _, ok := out.Annotations[v1alpha1.ApprovedSignatureAnnotation]; ok {
		t.Fatalf("dry run got a signature: %v", out.Annotations)
	}
	a, err := approval.Decode([]byte(out.Annotations[v1alpha1.ApprovedAnnotation]))
	if err != nil || len(a.Interfaces) != 1 || a.Interfaces[0].Interface != "net1" {
		t.Fatalf("dry run's approval %q: %v", out.Annotations[v1alpha1.ApprovedAnnotation], err)
	}
	if _, err := approval.VerifyPod(f.verifier(), created(out)); err == nil {
		t.Fatal("the agent would accept a dry run's approval")
	}
	if len(out.Spec.ReadinessGates) != 1 || len(out.Spec.InitContainers) != 1 {
		t.Fatalf("dry run not mutated as a real create: %+v", out.Spec)
	}
	// A dry run is still judged: a request beyond the profile is denied.
	bad := createRequest(t, testPod(map[string]string{v1alpha1.NetworksAnnotation: `[{"name":"data","vlan":300}]`}))
	bad.DryRun = ptr.To(true)
	wantDenied(t, f.h.Handle(context.Background(), bad), "vlan")

	// A real approval carried into a dry-run UPDATE loses its signature.
	old := f.admitted(t, map[string]string{v1alpha1.NetworksAnnotation: "data"})
	upd := updateRequest(t, old, old)
	upd.DryRun = ptr.To(true)
	got := applyPatch(t, upd, f.h.Handle(context.Background(), upd))
	if _, ok := got.Annotations[v1alpha1.ApprovedSignatureAnnotation]; ok {
		t.Fatalf("dry-run update kept a signature: %v", got.Annotations)
	}
}

func TestUpdateBindsApprovalToThePodUID(t *testing.T) {
	f := newFixture(t)
	old := f.admitted(t, map[string]string{v1alpha1.NetworksAnnotation: "data"})
	// An hour later the creation-time approval still binds this pod (it
	// was created right after the approval was issued): a label change
	// keeps it.
	f.now = f.now.Add(time.Hour)
	touched := old.DeepCopy()
	touched.Labels = map[string]string{"touched": "yes"}
	wantPatches(t, f.h.Handle(context.Background(), updateRequest(t, old, touched)), nil)
	// A changed request is signed anew, bound to the pod's UID.
	pod := touched.DeepCopy()
	pod.Annotations[v1alpha1.NetworksAnnotation] = "data@net5"
	resp := f.h.Handle(context.Background(), updateRequest(t, touched, pod))
	out := applyPatch(t, updateRequest(t, touched, pod), resp)
	a, err := approval.VerifyPod(f.verifier(), out)
	if err != nil || a.PodUID != "uid-p" || !a.IssuedAt.Time.Equal(f.now) {
		t.Fatalf("UPDATE approval %+v, %v", a, err)
	}
	// The next UPDATE keeps it: it is this pod's already.
	f.now = f.now.Add(time.Hour)
	again := out.DeepCopy()
	again.Labels["touched"] = "twice"
	wantPatches(t, f.h.Handle(context.Background(), updateRequest(t, out, again)), nil)
	// Put on another pod, it does not verify.
	other := out.DeepCopy()
	other.UID = "uid-other"
	if _, err := approval.VerifyPod(f.verifier(), other); err == nil || !strings.Contains(err.Error(), "issued for pod uid uid-p") {
		t.Fatalf("approval moved to another pod: %v", err)
	}
}

func TestRotatedKeyResignsOnUpdate(t *testing.T) {
	f := newFixture(t)
	old := f.admitted(t, map[string]string{v1alpha1.NetworksAnnotation: "data"})
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	f.h.Signer = NewSigningKey(func() (approval.Signer, error) { return approval.Ed25519Signer{Key: priv}, nil })
	pod := old.DeepCopy()
	pod.Labels = map[string]string{"touched": "yes"}
	resp := f.h.Handle(context.Background(), updateRequest(t, old, pod))
	a, err := approval.VerifyPod(approval.Ed25519Verifier{Keys: []ed25519.PublicKey{priv.Public().(ed25519.PublicKey)}}, applyPatch(t, updateRequest(t, old, pod), resp))
	if err != nil || a.KeyID != approval.KeyID(priv.Public().(ed25519.PublicKey)) {
		t.Fatalf("after rotation: %+v, %v", a, err)
	}
}

func TestUpdateOfUnchangedRequestNoLongerGrantedRemovesApproval(t *testing.T) {
	f := newFixture(t)
	old := testPod(map[string]string{v1alpha1.NetworksAnnotation: "data"})
	old = applyPatch(t, createRequest(t, old), f.h.Handle(context.Background(), createRequest(t, old)))

	// The profile is gone: only the namespace is left.
	f2 := newFixture(t, testNamespace("t1", map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"}))
	pod := old.DeepCopy()
	pod.Labels = map[string]string{"touched": "yes"}
	resp := f2.h.Handle(context.Background(), updateRequest(t, old, pod))
	wantPatches(t, resp, []jsonpatch.JsonPatchOperation{
		{Operation: "remove", Path: "/metadata/annotations/podnet.io~1approved"},
		{Operation: "remove", Path: "/metadata/annotations/podnet.io~1approved-signature"},
	})
	if len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "approval was removed") {
		t.Errorf("warnings %q", resp.Warnings)
	}

	// A changed request is judged like a new one: denied.
	pod.Annotations[v1alpha1.NetworksAnnotation] = "data@net7"
	wantDenied(t, f2.h.Handle(context.Background(), updateRequest(t, old, pod)), "no NetworkProfile")
}

func TestIgnoresWhatIsNotAPodCreateOrUpdate(t *testing.T) {
	f := newFixture(t)
	pod := testPod(map[string]string{v1alpha1.NetworksAnnotation: "data"})
	del := createRequest(t, pod)
	del.Operation = admissionv1.Delete
	sub := createRequest(t, pod)
	sub.SubResource = "status"
	other := createRequest(t, pod)
	other.Kind = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	for _, req := range []admission.Request{del, sub, other} {
		resp := f.h.Handle(context.Background(), req)
		if !resp.Allowed || len(resp.Patches) != 0 {
			t.Errorf("%s %s/%s: %+v", req.Operation, req.Kind.Kind, req.SubResource, resp)
		}
	}
}

func TestCannotDecideIsAnErrorNotADenial(t *testing.T) {
	pod := testPod(map[string]string{v1alpha1.NetworksAnnotation: "data"})

	f := newFixture(t)
	f.h.Ready = func() error { return errors.New("cache not synced") }
	wantErrored(t, f.h.Handle(context.Background(), createRequest(t, pod)), "cache not synced")

	f = newFixture(t)
	f.h.Signer = NewSigningKey(func() (approval.Signer, error) { return nil, errors.New("no such file") })
	wantErrored(t, f.h.Handle(context.Background(), createRequest(t, pod)), "signing key not loaded")

	f = newFixture(t, TelcoProfile())
	wantErrored(t, f.h.Handle(context.Background(), createRequest(t, pod)), `namespace "t1" is not in the webhook's cache`)
}

func wantErrored(t *testing.T, resp admission.Response, substring string) {
	t.Helper()
	if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusServiceUnavailable || !strings.Contains(resp.Result.Message, substring) {
		t.Errorf("want a 503 mentioning %q, got allowed=%v %+v", substring, resp.Allowed, resp.Result)
	}
}

func TestSigningKeyRetriesUntilLoaded(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(nil)
	calls := 0
	k := NewSigningKey(func() (approval.Signer, error) {
		calls++
		if calls < 3 {
			return nil, errors.New("not mounted yet")
		}
		return approval.Ed25519Signer{Key: priv}, nil
	})
	for range 2 {
		if err := k.Loaded(); err == nil || !strings.Contains(err.Error(), "not mounted yet") {
			t.Fatalf("loaded too early: %v", err)
		}
	}
	if err := k.Loaded(); err != nil {
		t.Fatal(err)
	}
	if _, err := k.PrivateKey(); err != nil || calls != 3 {
		t.Fatalf("sign after load: %v, %d loads", err, calls)
	}
}

func TestDefaultsMatchTheWaitImage(t *testing.T) {
	// hack/image is a build tool the binary must not link; the test keeps
	// the two spellings of the wait image and binary in step.
	for _, c := range []struct{ got, want string }{
		{DefaultWaitImage, image.WaitImage},
		{WaitBinary, image.WaitBinary},
	} {
		if c.got != c.want {
			t.Errorf("%q, hack/image says %q", c.got, c.want)
		}
	}
}

// TestCreateAttachAtSandboxSetupAddsNoWaitContainer: with the chained CNI
// plugin on every node the pod gets its approval and the readiness gate,
// and no init container.
func TestCreateAttachAtSandboxSetupAddsNoWaitContainer(t *testing.T) {
	f := newFixture(t)
	f.h.Hold = v1alpha1.HoldAttachAtSandboxSetup
	pod := testPod(map[string]string{v1alpha1.NetworksAnnotation: "data"})
	req := createRequest(t, pod)
	resp := f.h.Handle(context.Background(), req)
	payload, sig := f.expectedApproval(t, pod)
	wantPatches(t, resp, approvedPatches(payload, sig))
	if out := applyPatch(t, req, resp); len(out.Spec.InitContainers) != 0 {
		t.Errorf("init containers %v, want none", out.Spec.InitContainers)
	}

	// A pod asking for the wait container still gets it.
	pod = testPod(map[string]string{v1alpha1.NetworksAnnotation: "data", v1alpha1.WaitAnnotation: "true"})
	out := applyPatch(t, createRequest(t, pod), f.h.Handle(context.Background(), createRequest(t, pod)))
	if len(out.Spec.InitContainers) != 1 || out.Spec.InitContainers[0].Name != v1alpha1.WaitContainerName {
		t.Errorf("with %s=true: init containers %v, want the wait container", v1alpha1.WaitAnnotation, out.Spec.InitContainers)
	}
}
