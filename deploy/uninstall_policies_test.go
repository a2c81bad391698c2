package deploy

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/test/testenv"
)

// uninstallUser is the Helm chart's pre-delete hook identity.
const uninstallUser = "system:serviceaccount:podnet-system:podnet-uninstall"

// TestPolicyUninstallHookNodes: the chart's uninstall hook needs patch on
// every Node (its ClusterRole, as the chart grants it), and
// podnet-uninstall-nodes narrows that to podnet's annotations: it removes
// them, and changes no label, no other annotation and no spec.
func TestPolicyUninstallHookNodes(t *testing.T) {
	env := sharedPolicies(t)
	ctx := context.Background()
	admin := env.Client
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "podnet-uninstall-podnet-system"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list", "patch"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: uninstallUser}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a",
		Labels:      map[string]string{"kubernetes.io/hostname": "node-a"},
		Annotations: map[string]string{"podnet.io/agent-uninstalled": "0b5c1a6e", "podnet.io/vxlan-vnis": "7", "other": "x"}}}
	deleteAtEnd(t, admin, role, binding)
	for _, o := range []client.Object{role, binding, node} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	hook := impersonate(t, env, rest.ImpersonationConfig{UserName: uninstallUser, Groups: []string{"system:serviceaccounts", "system:authenticated"}})
	const why = "only the podnet.io/ annotations of Nodes"
	testenv.Eventually(t, 60*time.Second, "policy refusing the hook a label", func(ctx context.Context) error {
		return refused(patchNode(ctx, hook, "node-a", `{"metadata":{"labels":{"zone":"b"}}}`, client.DryRunAll), why)
	})
	for what, patch := range map[string]string{
		"a label":              `{"metadata":{"labels":{"kubernetes.io/hostname":"node-b"}}}`,
		"a label removed":      `{"metadata":{"labels":{"kubernetes.io/hostname":null}}}`,
		"another annotation":   `{"metadata":{"annotations":{"other":"y"}}}`,
		"a new annotation":     `{"metadata":{"annotations":{"example.com/x":"y"}}}`,
		"the spec":             `{"spec":{"unschedulable":true}}`,
		"a taint":              `{"spec":{"taints":[{"key":"x","effect":"NoSchedule"}]}}`,
		"podnet's and another": `{"metadata":{"annotations":{"podnet.io/vxlan-vnis":null,"other":null}}}`,
	} {
		if err := refused(patchNode(ctx, hook, "node-a", patch), why); err != nil {
			t.Errorf("the uninstall hook changing %s of a Node: %v", what, err)
		}
	}
	if err := patchNode(ctx, hook, "node-a", `{"metadata":{"annotations":{"podnet.io/agent-uninstalled":null,"podnet.io/vxlan-vnis":null}}}`); err != nil {
		t.Fatalf("the uninstall hook removing podnet's annotations: %v", err)
	}
	var got corev1.Node
	if err := admin.Get(ctx, client.ObjectKeyFromObject(node), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Annotations) != 1 || got.Annotations["other"] != "x" || got.Labels["kubernetes.io/hostname"] != "node-a" || got.Spec.Unschedulable {
		t.Errorf("node after the hook's writes: labels %v, annotations %v, unschedulable %v; want only podnet's annotations gone", got.Labels, got.Annotations, got.Spec.Unschedulable)
	}
}
