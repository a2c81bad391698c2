package deploy

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// TestPolicyKeepsNRIRequiredPlugins installs deploy/policies on a real API
// server (without podnet's webhook, so the policy alone answers) and tries,
// as a tenant who owns a namespace, to add, change or remove NRI's
// required-plugins annotations of a podnet pod through the pod, pods/status
// and a binding, and any other annotation through pods/status (where a
// tolerate-missing-plugins annotation of any name would go); each is
// refused, while other annotation edits of the pod itself and the same
// edits on a pod that is not podnet's go through.
func TestPolicyKeepsNRIRequiredPlugins(t *testing.T) {
	env := sharedPolicies(t)
	ctx := context.Background()
	admin := env.Client
	tenant := impersonate(t, env, rest.ImpersonationConfig{UserName: "tenant", Groups: []string{"system:authenticated"}})
	const key = v1alpha1.NRIRequiredPluginsAnnotation
	const want = "may not be added, changed or removed"

	held := podOn("held", "node-a")
	held.Annotations[key] = v1alpha1.NRIRequiredPluginsValue
	plain := podOn("plain", "node-a")
	delete(plain.Annotations, v1alpha1.NetworksAnnotation)
	unbound := podOn("unbound", "")
	for _, p := range []*corev1.Pod{held, plain, unbound} {
		if err := admin.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// The API server loads the policy asynchronously: wait for it to
	// refuse a dry-run probe.
	testenv.Eventually(t, 60*time.Second, "policy refusing with "+want, func(ctx context.Context) error {
		return refused(patchPodDry(ctx, tenant, held, `{"metadata":{"annotations":{"`+key+`":"[]"}}}`), want)
	})

	edits := map[string]string{
		"change":            `{"metadata":{"annotations":{"` + key + `":"[]"}}}`,
		"remove":            `{"metadata":{"annotations":{"` + key + `":null}}}`,
		"add pod key":       `{"metadata":{"annotations":{"` + key + `/pod":"[]"}}}`,
		"add container key": `{"metadata":{"annotations":{"` + key + `/container.app":"[]"}}}`,
	}
	for name, patch := range edits {
		if err := refused(patchPod(ctx, tenant, held, patch), want); err != nil {
			t.Errorf("pod, %s: %v", name, err)
		}
		if err := refused(statusPatch(ctx, tenant, held, patch), want); err != nil {
			t.Errorf("pods/status, %s: %v", name, err)
		}
	}
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: unbound.Name, Annotations: map[string]string{key + "/container.app": "[]"}},
		Target:     corev1.ObjectReference{Kind: "Node", Name: "node-a"},
	}
	if err := refused(tenant.SubResource("binding").Create(ctx, unbound, b), want); err != nil {
		t.Errorf("binding: %v", err)
	}

	// Whatever annotation an admin names as the validator's
	// tolerate_missing_plugins_annotation, a tenant cannot put it on a
	// podnet pod through pods/status (the webhook refuses it on the pod).
	for _, patch := range []string{`{"metadata":{"annotations":{"tolerate.example.com/skip":"true"}}}`, `{"metadata":{"annotations":{"other":"x"}}}`} {
		if err := refused(statusPatch(ctx, tenant, held, patch), "annotations of a podnet pod may not be added, changed or removed through pods/status"); err != nil {
			t.Errorf("pods/status, %s: %v", patch, err)
		}
	}
	if err := statusPatch(ctx, tenant, plain, `{"metadata":{"annotations":{"tolerate.example.com/skip":"true"}}}`); err != nil {
		t.Errorf("pods/status of a pod that is not podnet's: %v", err)
	}

	// The controls: another annotation of the podnet pod, and the same
	// edit of a pod that is not podnet's.
	if err := patchPod(ctx, tenant, held, `{"metadata":{"annotations":{"other":"x"}}}`); err != nil {
		t.Errorf("other annotation of a podnet pod: %v", err)
	}
	if err := patchPod(ctx, tenant, plain, edits["add container key"]); err != nil {
		t.Errorf("a pod that is not podnet's: %v", err)
	}
	var got corev1.Pod
	if err := admin.Get(ctx, client.ObjectKeyFromObject(held), &got); err != nil {
		t.Fatal(err)
	}
	for k, v := range got.Annotations {
		if k != key && strings.HasPrefix(k, key) {
			t.Errorf("annotation %s=%s went through", k, v)
		}
	}
	if got.Annotations[key] != v1alpha1.NRIRequiredPluginsValue {
		t.Errorf("%s = %q, want %q", key, got.Annotations[key], v1alpha1.NRIRequiredPluginsValue)
	}
}

func patchPodDry(ctx context.Context, c client.Client, p *corev1.Pod, patch string) error {
	return c.Patch(ctx, p.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)), client.DryRunAll)
}
