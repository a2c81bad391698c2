package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/test/testenv"
	"podnet.io/podnet/webhook"
)

// TestAPIServerAdmitsPodsThroughWebhook drives the webhook through a real
// kube-apiserver with the generated MutatingWebhookConfiguration: what a
// tenant sees with kubectl, what the agent reads, and what the API server
// lets the webhook do on UPDATE.
func TestAPIServerAdmitsPodsThroughWebhook(t *testing.T) {
	// Its own API server: it labels kube-system, cluster-wide and for good.
	h := startHarness(t)
	ctx := context.Background()
	c := h.env.Client
	h.createNamespace(t, "t1", map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"})
	h.createNamespace(t, "plain", map[string]string{"tenant": "telco"})
	h.createProfile(t, webhook.TelcoProfile())

	get := func(t *testing.T, ns, name string) *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	verify := func(t *testing.T, p *corev1.Pod) *v1alpha1.Approval {
		t.Helper()
		a, err := approval.VerifyPod(h.verifier, p)
		if err != nil {
			t.Fatalf("the agent would refuse pod %s/%s: %v", p.Namespace, p.Name, err)
		}
		if a == nil {
			t.Fatalf("pod %s/%s has no approval; annotations %v", p.Namespace, p.Name, p.Annotations)
		}
		return a
	}

	t.Run("approved pod gets signed approval, gate and wait container", func(t *testing.T) {
		p := pod("t1", "approved", map[string]string{v1alpha1.NetworksAnnotation: `[{"name":"data","vlan":150,"ips":["192.168.100.7/24"]}]`})
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		got := get(t, "t1", "approved")
		a := verify(t, got)
		want := v1alpha1.ApprovedInterface{
			Interface: "net1", Network: "data", Profile: "telco-data", Kind: v1alpha1.KindBridge,
			Bridge: "pnbr-data", VLAN: 150, MTU: 1500,
			IPAM: &v1alpha1.ApprovedIPAM{Pools: []string{"192.168.100.0/24"}, Gateways: []string{"192.168.100.1"}, Static: []string{"192.168.100.7/24"},
				AddressSpace: "pnbr-data.bridge", MaxPerNamespace: 126},
		}
		if a.Namespace != "t1" || a.ServiceAccount != "default" || len(a.Interfaces) != 1 || !apiequality.Semantic.DeepEqual(a.Interfaces[0], want) {
			t.Errorf("approval %+v", a)
		}
		if g := got.Spec.ReadinessGates; len(g) != 1 || g[0].ConditionType != v1alpha1.NetworksReadyCondition {
			t.Errorf("readiness gates %+v", g)
		}
		if len(got.Spec.InitContainers) != 1 {
			t.Fatalf("init containers %+v", got.Spec.InitContainers)
		}
		w := got.Spec.InitContainers[0]
		sc := w.SecurityContext
		if w.Name != v1alpha1.WaitContainerName || w.Image != webhook.DefaultWaitImage ||
			!slices.Equal(append(w.Command, w.Args...), []string{webhook.WaitBinary, "--interfaces", "net1", "--timeout", "5m0s"}) ||
			sc == nil || !*sc.RunAsNonRoot || *sc.RunAsUser != 65532 || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem ||
			len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("wait container %+v", w)
		}

		// Idempotent: the stored pod (as the API server defaulted it)
		// admitted once more gets no patch.
		raw, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		resp := h.handler.Handle(ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID: "again", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: "t1", Name: "approved",
			Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
		}})
		if !resp.Allowed || len(resp.Patches) != 0 {
			t.Errorf("second pass: allowed=%v patches %+v", resp.Allowed, resp.Patches)
		}
	})

	t.Run("denied pod's create error says why", func(t *testing.T) {
		err := c.Create(ctx, pod("t1", "denied", map[string]string{v1alpha1.NetworksAnnotation: `[{"name":"data","vlan":300}]`}))
		if err == nil {
			t.Fatal("created")
		}
		for _, s := range []string{`admission webhook "pods.podnet.io" denied the request`, "vlan", "300", `profile "telco-data"`, "100-199", `namespace "t1" may use: data`} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error %q does not mention %q", err, s)
			}
		}
	})

	t.Run("kubectl apply shows the denial", func(t *testing.T) {
		kubectl := filepath.Join(h.env.Root, "_output", "k8s", "bin", "kubectl")
		manifest := `apiVersion: v1
kind: Pod
metadata:
  name: by-kubectl
  namespace: t1
  annotations:
    podnet.io/networks: "data, uplink@net2"
spec:
  containers:
  - name: app
    image: localhost/podnet/busybox:dev
`
		path := filepath.Join(t.TempDir(), "pod.yaml")
		if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(kubectl, "--kubeconfig", h.kubeconfig(t), "apply", "-f", path)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err == nil {
			t.Fatalf("kubectl apply succeeded: %s", stdout.String())
		}
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("kubectl: %v", err)
		}
		for _, s := range []string{`admission webhook "pods.podnet.io" denied the request`, `pod t1/by-kubectl`, `"uplink"`, `namespace "t1" may use: data (profile "telco-data"`} {
			if !strings.Contains(stderr.String(), s) {
				t.Errorf("kubectl stderr %q does not mention %q", stderr.String(), s)
			}
		}
		t.Logf("kubectl stderr: %s", stderr.String())
	})

	t.Run("approvals bound to the pod judged", func(t *testing.T) { testApprovalsBoundToThePodJudged(t, h) })

	t.Run("update of the request is re-approved", func(t *testing.T) {
		p := get(t, "t1", "approved")
		p.Annotations[v1alpha1.NetworksAnnotation] = `[{"name":"data","vlan":120,"mtu":9000,"ips":["192.168.100.7/24"]}]`
		if err := c.Update(ctx, p); err != nil {
			t.Fatal(err)
		}
		a := verify(t, get(t, "t1", "approved"))
		if a.Interfaces[0].VLAN != 120 || a.Interfaces[0].MTU != 9000 {
			t.Errorf("re-approved %+v", a.Interfaces[0])
		}
		// An update the profile refuses is refused as a whole.
		p = get(t, "t1", "approved")
		p.Annotations[v1alpha1.NetworksAnnotation] = `[{"name":"data","mtu":9001}]`
		if err := c.Update(ctx, p); err == nil || !strings.Contains(err.Error(), "9001") {
			t.Errorf("update to mtu 9001: %v", err)
		}
	})

	t.Run("edited approval is refused, copied approval does not survive", func(t *testing.T) {
		src := get(t, "t1", "approved")
		good := src.Annotations[v1alpha1.ApprovedAnnotation]

		// Edited in place: refused, the stored approval stays.
		patch := client.MergeFrom(src.DeepCopy())
		src.Annotations[v1alpha1.ApprovedAnnotation] = strings.Replace(good, `"vlan":120`, `"vlan":4000`, 1)
		if err := c.Patch(ctx, src, patch); err == nil || !strings.Contains(err.Error(), "written only by podnet") {
			t.Fatalf("edit of the approval: %v", err)
		}
		if got := get(t, "t1", "approved").Annotations[v1alpha1.ApprovedAnnotation]; got != good {
			t.Errorf("edited approval survived: %s", got)
		}

		// Copied onto a pod that asks for nothing: refused.
		copied := map[string]string{
			v1alpha1.ApprovedAnnotation:          good,
			v1alpha1.ApprovedSignatureAnnotation: src.Annotations[v1alpha1.ApprovedSignatureAnnotation],
		}
		if err := c.Create(ctx, pod("t1", "copy-bare", copied)); err == nil || !strings.Contains(err.Error(), "asks for no network") {
			t.Fatalf("copy onto a pod without request: %v", err)
		}
		if err := c.Create(ctx, pod("t1", "copy-bare", nil)); err != nil {
			t.Fatal(err)
		}
		got := get(t, "t1", "copy-bare")
		if _, ok := got.Annotations[v1alpha1.ApprovedAnnotation]; ok || len(got.Spec.InitContainers) != 0 || len(got.Spec.ReadinessGates) != 0 {
			t.Errorf("copy onto a pod without request: %v %+v", got.Annotations, got.Spec)
		}

		// Copied onto a pod with another request: replaced by its own.
		ann := map[string]string{v1alpha1.NetworksAnnotation: "data"}
		for k, v := range copied {
			ann[k] = v
		}
		if err := c.Create(ctx, pod("t1", "copy-other", ann)); err != nil {
			t.Fatal(err)
		}
		if a := verify(t, get(t, "t1", "copy-other")); a.Interfaces[0].VLAN != 100 || a.Interfaces[0].IPAM.Static != nil {
			t.Errorf("copy onto another request: %+v", a.Interfaces[0])
		}
	})

	t.Run("removed request removes the approval and keeps the spec", func(t *testing.T) {
		p := get(t, "t1", "copy-other")
		delete(p.Annotations, v1alpha1.NetworksAnnotation)
		if err := c.Update(ctx, p); err != nil {
			t.Fatal(err)
		}
		got := get(t, "t1", "copy-other")
		if _, ok := got.Annotations[v1alpha1.ApprovedAnnotation]; ok {
			t.Errorf("approval kept: %v", got.Annotations)
		}
		if _, ok := got.Annotations[v1alpha1.ApprovedSignatureAnnotation]; ok {
			t.Errorf("signature kept: %v", got.Annotations)
		}
		if len(got.Spec.ReadinessGates) != 1 || len(got.Spec.InitContainers) != 1 {
			t.Errorf("spec changed: %+v", got.Spec)
		}
	})

	t.Run("API server forbids changing gates and init containers on update", func(t *testing.T) {
		// Why the webhook patches only annotations on UPDATE.
		p := get(t, "t1", "copy-bare")
		p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: v1alpha1.NetworksReadyCondition})
		if err := c.Update(ctx, p); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "pod updates may not change fields") {
			t.Errorf("adding a readiness gate on update: %v", err)
		}
		p = get(t, "t1", "copy-bare")
		p.Spec.InitContainers = []corev1.Container{{Name: "x", Image: "x"}}
		if err := c.Update(ctx, p); !apierrors.IsInvalid(err) {
			t.Errorf("adding an init container on update: %v", err)
		}
	})

	t.Run("pods in namespaces that did not opt in are untouched", func(t *testing.T) {
		src := get(t, "t1", "approved")
		before := h.decisions(t)
		ann := map[string]string{
			v1alpha1.NetworksAnnotation:          "data",
			v1alpha1.ApprovedAnnotation:          src.Annotations[v1alpha1.ApprovedAnnotation],
			v1alpha1.ApprovedSignatureAnnotation: src.Annotations[v1alpha1.ApprovedSignatureAnnotation],
		}
		// kube-system is excluded even when someone labels it.
		ks := &corev1.Namespace{}
		if err := c.Get(ctx, types.NamespacedName{Name: "kube-system"}, ks); err != nil {
			t.Fatal(err)
		}
		ks.Labels[v1alpha1.EnabledLabel] = "true"
		if err := c.Update(ctx, ks); err != nil {
			t.Fatal(err)
		}
		h.createNamespace(t, "kube-system", nil)
		for _, ns := range []string{"plain", "kube-system"} {
			if err := c.Create(ctx, pod(ns, "untouched", ann)); err != nil {
				t.Fatal(err)
			}
			got := get(t, ns, "untouched")
			if !maps.Equal(got.Annotations, ann) || len(got.Spec.InitContainers) != 0 || len(got.Spec.ReadinessGates) != 0 {
				t.Errorf("%s pod changed: %v %+v", ns, got.Annotations, got.Spec)
			}
		}
		// An opted-in pod without any podnet.io/ annotation is not even
		// sent (matchConditions): the webhook counts no decision for it.
		if err := c.Create(ctx, pod("t1", "no-annotations", map[string]string{"other": "x"})); err != nil {
			t.Fatal(err)
		}
		if after := h.decisions(t); after != before {
			t.Errorf("webhook decided %d times for pods it should never see", after-before)
		}
	})

	t.Run("server-side dry run", func(t *testing.T) {
		p := pod("t1", "dry", map[string]string{v1alpha1.NetworksAnnotation: "data"})
		if err := c.Create(ctx, p, client.DryRunAll); err != nil {
			t.Fatal(err)
		}
		// Judged and shown as it would be, but not signed: a dry run must
		// not mint an approval the tenant could keep.
		if _, err := approval.Decode([]byte(p.Annotations[v1alpha1.ApprovedAnnotation])); err != nil {
			t.Errorf("dry run shows no approval: %v", err)
		}
		if _, ok := p.Annotations[v1alpha1.ApprovedSignatureAnnotation]; ok {
			t.Errorf("dry run got a signature: %v", p.Annotations)
		}
		if len(p.Spec.InitContainers) != 1 || len(p.Spec.ReadinessGates) != 1 {
			t.Errorf("dry-run result not mutated: %+v", p.Spec)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			t.Errorf("dry run stored the pod: %v", err)
		}
		err := c.Create(ctx, pod("t1", "dry-denied", map[string]string{v1alpha1.NetworksAnnotation: "nope"}), client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("dry-run denial: %v", err)
		}
	})

	t.Run("metrics and readiness", func(t *testing.T) {
		body, err := h.get(ctx, h.metricURL)
		if err != nil {
			t.Fatal(err)
		}
		for _, re := range []string{
			`podnet_webhook_decisions_total\{operation="CREATE",profile="telco-data",result="approved"\} [1-9]`,
			`podnet_webhook_decisions_total\{operation="CREATE",profile="",result="denied"\} [1-9]`,
			`podnet_webhook_decisions_total\{operation="UPDATE",profile="",result="none"\} [1-9]`,
			`podnet_webhook_decision_duration_seconds_count\{operation="CREATE",result="approved"\} [1-9]`,
		} {
			if !regexp.MustCompile(re).MatchString(body) {
				t.Errorf("metrics lack %s", re)
			}
		}
		for _, check := range []string{"informers", "signing-key", "webhook-server"} {
			if _, err := h.get(ctx, h.probeURL+"/readyz/"+check); err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("deployment's denied pods show in the FailedCreate event", func(t *testing.T) {
		h.env.StartControllerManager(t, "replicaset", "deployment")
		labels := map[string]string{"app": "denied"}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "denied"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{v1alpha1.NetworksAnnotation: `[{"name":"data","vlan":4000}]`}},
					Spec:       pod("", "", nil).Spec,
				},
			},
		}
		if err := c.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 90*time.Second, "FailedCreate event with the denial", func(ctx context.Context) error {
			var events corev1.EventList
			if err := c.List(ctx, &events, client.InNamespace("t1")); err != nil {
				return err
			}
			var seen []string
			for _, e := range events.Items {
				if e.InvolvedObject.Kind == "ReplicaSet" && e.Reason == "FailedCreate" {
					if strings.Contains(e.Message, `denied the request`) && strings.Contains(e.Message, "4000") && strings.Contains(e.Message, "100-199") {
						return nil
					}
					seen = append(seen, e.Message)
				}
			}
			return fmt.Errorf("no such event; FailedCreate events: %q", seen)
		})
	})

	t.Run("wait container keeps the QoS class and passes a quota", func(t *testing.T) {
		testWaitContainerKeepsQoSAndQuota(t, h)
	})

	t.Run("the agent's status write is not admitted, a tenant's is refused", func(t *testing.T) {
		status := func(v string) client.Patch {
			return client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.NetworkStatusAnnotation, v))
		}
		before := h.decisions(t)
		if err := h.agentClient(t).Patch(ctx, get(t, "t1", "approved"), status(`[{"name":"agent"}]`)); err != nil {
			t.Fatalf("agent's status patch: %v", err)
		}
		if after := h.decisions(t); after != before {
			t.Errorf("the webhook admitted the agent's status write (%d decisions)", after-before)
		}
		err := c.Patch(ctx, get(t, "t1", "approved"), status(`[{"name":"forged"}]`))
		if err == nil || !strings.Contains(err.Error(), v1alpha1.NetworkStatusAnnotation) {
			t.Errorf("tenant's status patch: %v, want a refusal naming %s", err, v1alpha1.NetworkStatusAnnotation)
		}
		if got := get(t, "t1", "approved").Annotations[v1alpha1.NetworkStatusAnnotation]; got != `[{"name":"agent"}]` {
			t.Errorf("status %q, want the agent's", got)
		}
	})

	t.Run("revoked profile: next update removes the approval with a warning", func(t *testing.T) {
		if err := c.Delete(ctx, webhook.TelcoProfile()); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 30*time.Second, "profile gone from the webhook's cache", func(ctx context.Context) error {
			err := h.mgr.GetCache().Get(ctx, client.ObjectKey{Name: "telco-data"}, &v1alpha1.NetworkProfile{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still cached (%v)", err)
		})
		// Any metadata update still goes through (a finalizer removal or
		// the agent's status must never be blocked); the approval goes.
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(filepath.Join(h.env.Root, "_output", "k8s", "bin", "kubectl"),
			"--kubeconfig", h.kubeconfig(t), "-n", "t1", "label", "pod", "approved", "touched=yes")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("kubectl label: %v: %s", err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "Warning:") || !strings.Contains(stderr.String(), "The approval was removed") {
			t.Errorf("kubectl stderr %q lacks the warning", stderr.String())
		}
		got := get(t, "t1", "approved")
		if _, ok := got.Annotations[v1alpha1.ApprovedAnnotation]; ok || got.Labels["touched"] != "yes" {
			t.Errorf("after revocation: labels %v annotations %v", got.Labels, got.Annotations)
		}
	})
}

// decisions is the webhook's total decision count from its metrics
// endpoint.
func (h *harness) decisions(t testing.TB) int {
	t.Helper()
	body, err := h.get(context.Background(), h.metricURL)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, m := range regexp.MustCompile(`(?m)^podnet_webhook_decisions_total\{[^}]*\} (\d+)$`).FindAllStringSubmatch(body, -1) {
		n, _ := strconv.Atoi(m[1])
		total += n
	}
	return total
}
