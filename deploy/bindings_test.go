package deploy

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
)

// testLegacyBindings: the top-level bindings resource (POST
// /api/v1/namespaces/NS/bindings) copies a Binding's annotations onto the
// pod as pods/binding does; a tenant allowed to create Bindings cannot use
// it to put an approval on a pod the webhook never judged, and may still
// bind without podnet's annotations.
func testLegacyBindings(t *testing.T, admin, tenant client.Client) {
	ctx := context.Background()
	bare := podOn("unbound-legacy", "")
	bare.Annotations = nil
	if err := admin.Create(ctx, bare); err != nil {
		t.Fatal(err)
	}
	binding := func(annotations map[string]string) *corev1.Binding {
		return &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: bare.Name, Annotations: annotations},
			Target:     corev1.ObjectReference{Kind: "Node", Name: "node-a"},
		}
	}
	cloned := map[string]string{v1alpha1.NetworksAnnotation: "data", v1alpha1.ApprovedAnnotation: "{}", v1alpha1.ApprovedSignatureAnnotation: "AAAA"}
	if err := refused(tenant.Create(ctx, binding(cloned)), "through bindings"); err != nil {
		t.Fatal(err)
	}
	var got corev1.Pod
	if err := admin.Get(ctx, client.ObjectKeyFromObject(bare), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Annotations) != 0 || got.Spec.NodeName != "" {
		t.Fatalf("binding went through: node %q annotations %v", got.Spec.NodeName, got.Annotations)
	}
	// The control: a Binding without podnet's annotations binds.
	if err := tenant.Create(ctx, binding(map[string]string{"other": "x"})); err != nil {
		t.Fatalf("binding without podnet annotations: %v", err)
	}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(bare), &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != "node-a" {
		t.Fatalf("pod not bound: node %q", got.Spec.NodeName)
	}
}

// testPrefixedDrop: the runtime prefixes capability names with CAP_, so
// dropping "CAP_NET_RAW" drops nothing; the policy does not take it for a
// drop of NET_RAW.
func testPrefixedDrop(t *testing.T, admin, tenant client.Client) {
	ctx := context.Background()
	p := podOn("eph-prefixed", "node-a")
	if err := admin.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "dbg", Image: "busybox", SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"CAP_NET_RAW"}}}}}}
	if err := refused(tenant.SubResource("ephemeralcontainers").Update(ctx, p), "must drop NET_RAW"); err != nil {
		t.Fatal(err)
	}
}
