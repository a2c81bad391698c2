package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// annotationsPolicy is the admission policy that keeps podnet's
// annotations off the pods' subresources and the bindings resource (one
// rule of podnet's policy on pod writes).
const annotationsPolicy = "podnet-pods"

// testBindingAttacks: an approval stays on the pod the webhook judged.
// Mallory may create Bindings (the legacy top-level resource), as a
// tenant running its own scheduler would.
func (s *suite) testBindingAttacks(t *testing.T, m client.Client) {
	ctx := context.Background()
	objs := []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: attackNS, Name: "binder"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"bindings"}, Verbs: []string{"create"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: attackNS, Name: "binder"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "binder"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: mallory}}},
	}
	for _, o := range objs {
		if err := s.client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("BindingsCloneOntoPrivilegedPod", func(t *testing.T) { s.testBindingsClone(t, m) })
	t.Run("RuntimeAttachKeepingNetRaw", func(t *testing.T) { s.testRuntimeAttachNetRaw(t, m) })
	t.Run("ForgedNetworkStatusAtCreate", func(t *testing.T) { s.testForgedStatus(t, m) })
	t.Run("HostPathToTheAgentsSocket", func(t *testing.T) {
		for _, path := range []string{podnetv1.AgentRunDir, "/run"} {
			p := attackPod("socket", attackNS, nil)
			p.Spec.Volumes = []corev1.Volume{{Name: "podnet", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}}
			wantWebhookDenial(t, m.Create(ctx, p), "spec.volumes[0].hostPath.path", fmt.Sprintf("%q", path), "reaches "+podnetv1.AgentRunDir)
		}
	})
}

// testBindingsClone: a fresh approval, copied within its creation window
// by a Binding onto a bare pod created with NET_ADMIN and NET_RAW and no
// request (the webhook never saw it). The admission policy refuses the
// Binding; with the policy gone (a cluster installed without
// deploy/policies), the Binding lands and the agent refuses the pod: no
// net1, and the condition says which container holds what.
func (s *suite) testBindingsClone(t *testing.T, m client.Client) {
	ctx := context.Background()
	donor := attackPod("donor", attackNS, nil)
	if err := m.Create(ctx, donor); err != nil {
		t.Fatal(err)
	}
	cloned := map[string]string{}
	for _, k := range []string{podnetv1.NetworksAnnotation, podnetv1.ApprovedAnnotation, podnetv1.ApprovedSignatureAnnotation} {
		cloned[k] = donor.Annotations[k]
	}
	// Created right after the approval was issued: inside its window.
	bare := attackPod("bare-admin", attackNS, nil)
	bare.Annotations = nil
	bare.Spec.SchedulerName, bare.Spec.NodeSelector = "nobody", nil
	bare.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "NET_RAW"}}}
	if err := m.Create(ctx, bare); err != nil {
		t.Fatal(err)
	}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: attackNS, Name: bare.Name, Annotations: cloned},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node1},
	}
	wantPolicyRefusal(t, m.Create(ctx, binding.DeepCopy()), "through bindings")

	// Defence in depth: without the policy the agent refuses the pod.
	s.withoutPolicyBinding(t, annotationsPolicy)
	eventually(t, time.Minute, "the Binding lands once the policy is gone", func(ctx context.Context) error {
		return m.Create(ctx, binding.DeepCopy())
	})
	got := s.getPod(t, attackNS, bare.Name)
	if got.Annotations[podnetv1.ApprovedAnnotation] != cloned[podnetv1.ApprovedAnnotation] || got.Spec.NodeName != node1 {
		t.Fatalf("the Binding did not copy the approval onto the pod: node %q annotations %v", got.Spec.NodeName, got.Annotations)
	}
	// Once the pod runs (its sandbox exists, so an agent that attached
	// would have), it has no net1 and the condition still says why.
	eventually(t, 3*time.Minute, "pod "+bare.Name+" running", func(ctx context.Context) error {
		if p := s.getPod(t, attackNS, bare.Name); p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
	s.waitCondition(t, attackNS, bare.Name, "PrivilegedPod")
	s.waitEvent(t, attackNS, bare.Name, "PrivilegedPod")
	s.noNet1(t, attackNS, bare.Name)
	if c := networksReady(s.getPod(t, attackNS, bare.Name)); c == nil || c.Reason != "PrivilegedPod" || !strings.Contains(c.Message, `container "app" adds NET_ADMIN`) {
		t.Fatalf("condition %+v, want PrivilegedPod naming the container and the capability", c)
	}
	for _, p := range []*corev1.Pod{donor, bare} {
		if err := s.client.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
}

// withoutPolicyBinding deletes an admission policy's binding for the rest
// of the test and puts it back afterwards, waiting until the policy
// refuses again (a dry-run status write of a podnet annotation).
func (s *suite) withoutPolicyBinding(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	var b admissionregistrationv1.ValidatingAdmissionPolicyBinding
	if err := s.client.Get(ctx, client.ObjectKey{Name: name}, &b); err != nil {
		t.Fatal(err)
	}
	if err := s.client.Delete(ctx, b.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		restored := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: b.Name, Labels: b.Labels, Annotations: b.Annotations}, Spec: b.Spec}
		if err := s.client.Create(ctx, restored); err != nil {
			t.Fatalf("restore ValidatingAdmissionPolicyBinding %s: %v", name, err)
		}
		probe := s.getPod(t, attackNS, "victim")
		eventually(t, time.Minute, "policy "+name+" in force again", func(ctx context.Context) error {
			err := s.client.Status().Patch(ctx, probe.DeepCopy(), rawPatch(`{"metadata":{"annotations":{"podnet.io/probe":"x"}}}`), client.DryRunAll)
			if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
				return fmt.Errorf("dry-run status write: %v", err)
			}
			return nil
		})
	})
}

// testRuntimeAttachNetRaw: a pod created without a request keeps the
// runtime's NET_RAW; asking afterwards for a network without raw sockets
// is refused with what to do. A pod that dropped NET_RAW may attach.
func (s *suite) testRuntimeAttachNetRaw(t *testing.T, m client.Client) {
	ctx := context.Background()
	keeps := attackPod("keeps-raw", attackNS, nil)
	delete(keeps.Annotations, podnetv1.NetworksAnnotation)
	drops := attackPod("drops-raw", attackNS, nil)
	delete(drops.Annotations, podnetv1.NetworksAnnotation)
	drops.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}}}
	for _, p := range []*corev1.Pod{keeps, drops} {
		if err := m.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []*corev1.Pod{keeps, drops} {
		eventually(t, 3*time.Minute, "pod "+p.Name+" running", func(ctx context.Context) error {
			if got := s.getPod(t, attackNS, p.Name); got.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("phase %s", got.Status.Phase)
			}
			return nil
		})
	}
	if caps := s.capabilities(t, attackNS, keeps.Name); caps&(1<<capNetRaw) == 0 {
		t.Fatalf("pod %s lacks NET_RAW (CapEff %x): this test shows nothing", keeps.Name, caps)
	}
	ask := rawPatch(`{"metadata":{"annotations":{"podnet.io/networks":"data"}}}`)
	wantWebhookDenial(t, m.Patch(ctx, s.getPod(t, attackNS, keeps.Name), ask),
		`container "app" holds NET_RAW`, `network "data" (interface net1) does not allow raw sockets`, "create the pod with podnet.io/networks set")
	if got := s.getPod(t, attackNS, keeps.Name); got.Annotations[podnetv1.ApprovedAnnotation] != "" {
		t.Fatalf("pod %s got an approval: %v", keeps.Name, got.Annotations)
	}
	if err := m.Patch(ctx, s.getPod(t, attackNS, drops.Name), ask); err != nil {
		t.Fatalf("runtime attach of a pod that dropped NET_RAW: %v", err)
	}
	s.waitNet1(t, attackNS, drops.Name, true, 2*time.Minute)
	s.noNet1(t, attackNS, keeps.Name)
	for _, p := range []*corev1.Pod{keeps, drops} {
		if err := s.client.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
}

// testForgedStatus: a network status written at CREATE, podnet's or
// Multus', never reaches the stored pod; the agent's own status replaces
// nothing it did not write.
func (s *suite) testForgedStatus(t *testing.T, m client.Client) {
	ctx := context.Background()
	forged := `[{"name":"atk-x/data","interface":"net9","ips":["192.168.60.250"]}]`
	p := attackPod("forged-status", attackNS, map[string]string{
		podnetv1.NetworkStatusAnnotation: forged, podnetv1.MultusNetworkStatusAnnotation: forged,
	})
	if err := m.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{podnetv1.NetworkStatusAnnotation, podnetv1.MultusNetworkStatusAnnotation} {
		if v, ok := p.Annotations[k]; ok {
			t.Fatalf("%s stored at create: %s", k, v)
		}
	}
	got := s.waitNet1(t, attackNS, p.Name, true, 3*time.Minute)
	eventually(t, time.Minute, "the agent's network status", func(ctx context.Context) error {
		got = s.getPod(t, attackNS, p.Name)
		if _, err := statusOf(*got); err != nil {
			return err
		}
		return nil
	})
	inPool(t, got, "192.168.60.0/24")
	if st := got.Annotations[podnetv1.NetworkStatusAnnotation]; strings.Contains(st, "net9") {
		t.Fatalf("the forged entry is in the status: %s", st)
	}
	if err := s.client.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
}

// wantWebhookDenial checks err is podnet's webhook refusing, naming each
// of want.
func wantWebhookDenial(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("allowed, want podnet's webhook to refuse (%q)", want)
	}
	for _, w := range append([]string{`admission webhook "pods.podnet.io" denied the request`}, want...) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%v does not mention %q", err, w)
		}
	}
	t.Logf("refused: %v", err)
}
