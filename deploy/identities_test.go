package deploy

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/test/testenv"
)

// controlPlaneLabel is the node label the webhook and the controller are
// scheduled by (hack/localcluster sets it on the local cluster's first node).
const controlPlaneLabel = "node-role.kubernetes.io/control-plane"

// TestInstallPinsKeyAndControllerToControlPlane: the webhook (which holds
// the approval signing key) and the controller (whose token may delete any
// IPClaim) run only on control-plane nodes by default, tolerating their
// taint; the agent runs everywhere.
func TestInstallPinsKeyAndControllerToControlPlane(t *testing.T) {
	for _, dir := range []string{".", "overlays/local"} {
		objs := build(t, dir)
		for _, name := range []string{"podnet-webhook", "podnet-controller"} {
			var d appsv1.Deployment
			find(t, objs, "Deployment", name, &d)
			spec := d.Spec.Template.Spec
			if v, ok := spec.NodeSelector[controlPlaneLabel]; !ok || v != "" || len(spec.NodeSelector) != 1 {
				t.Errorf("%s: %s nodeSelector %v, want only %s", dir, name, spec.NodeSelector, controlPlaneLabel)
			}
			if !slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool {
				return tol.Key == controlPlaneLabel && tol.Operator == corev1.TolerationOpExists && tol.Effect == corev1.TaintEffectNoSchedule
			}) {
				t.Errorf("%s: %s does not tolerate the control-plane taint: %+v", dir, name, spec.Tolerations)
			}
		}
	}
}

// TestInstallGivesTheControllerOnlyItsLease: no ClusterRole of podnet
// grants Leases; the controller's Role in the install's namespace grants
// get and update of its own Lease by name and nothing else (no create: the
// install creates the Lease, and RBAC cannot limit a create to a name).
func TestInstallGivesTheControllerOnlyItsLease(t *testing.T) {
	objs := build(t, ".")
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
			continue
		}
		var r rbacv1.Role
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r); err != nil {
			t.Fatal(err)
		}
		for _, rule := range r.Rules {
			if !slices.Contains(rule.APIGroups, "coordination.k8s.io") && !slices.Contains(rule.APIGroups, "*") {
				continue
			}
			ok := o.GetKind() == "Role" && o.GetName() == "podnet-controller" && o.GetNamespace() == "podnet-system" &&
				slices.Equal(rule.Resources, []string{"leases"}) && slices.Equal(rule.ResourceNames, []string{"podnet-controller"}) &&
				slices.Equal(rule.Verbs, []string{"get", "update"})
			if !ok {
				t.Errorf("%s %s/%s grants %+v on coordination.k8s.io: want only get and update of Lease podnet-controller, in the controller's Role", o.GetKind(), o.GetNamespace(), o.GetName(), rule)
			}
		}
	}
	var lease unstructured.Unstructured
	find(t, objs, "Lease", "podnet-controller", &lease.Object)
	if lease.GetNamespace() != "podnet-system" {
		t.Errorf("Lease podnet-controller in namespace %q, want podnet-system", lease.GetNamespace())
	}
	var binding rbacv1.RoleBinding
	find(t, objs, "RoleBinding", "podnet-controller", &binding)
	if binding.RoleRef.Kind != "Role" || binding.RoleRef.Name != "podnet-controller" || len(binding.Subjects) != 1 ||
		binding.Subjects[0].Name != "podnet-controller" || binding.Subjects[0].Namespace != "podnet-system" {
		t.Errorf("RoleBinding podnet-controller: %+v", binding)
	}
}

// TestInstallFollowsItsNamespace installs deploy/default with another
// `namespace:` and checks that the install's namespace survives nowhere
// (the agent's user name in the policies and the webhook's match
// conditions, policy parameters, certificates, flow schemas), and that on
// a real API server the agent of that namespace is held by the policies.
func TestInstallFollowsItsNamespace(t *testing.T) {
	copied := filepath.Join(t.TempDir(), "deploy")
	if err := os.CopyFS(copied, os.DirFS(".")); err != nil {
		t.Fatal(err)
	}
	k := filepath.Join(copied, "default", "kustomization.yaml")
	data, err := os.ReadFile(k)
	if err != nil {
		t.Fatal(err)
	}
	moved := strings.Replace(string(data), "\nnamespace: podnet-system\n", "\nnamespace: netops\n", 1)
	if moved == string(data) {
		t.Fatal("deploy/default/kustomization.yaml sets no `namespace: podnet-system`")
	}
	if err := os.WriteFile(k, []byte(moved), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := build(t, filepath.Join(copied, "default"))
	agent := "'system:serviceaccount:netops:podnet-agent'"
	// Every policy names one of podnet's identities; the webhook's match
	// conditions name the agent.
	identity := regexp.MustCompile(`'system:serviceaccount:netops:podnet-[a-z]+'`)
	for _, o := range objs {
		text, err := runtime.Encode(unstructured.UnstructuredJSONScheme, &o)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(text), "podnet-system") {
			t.Errorf("%s %s still names podnet-system: %s", o.GetKind(), o.GetName(), text)
		}
		switch {
		case o.GetKind() == "ValidatingAdmissionPolicy" && strings.Contains(string(text), "serviceaccount"):
			if !identity.Match(text) {
				t.Errorf("%s %s names no identity of namespace netops", o.GetKind(), o.GetName())
			}
		case o.GetKind() == "MutatingWebhookConfiguration":
			if !strings.Contains(string(text), agent) {
				t.Errorf("%s %s does not name the agent as %s", o.GetKind(), o.GetName(), agent)
			}
		}
	}
	testAgentPoliciesHoldIn(t, objs, "netops")
}

// testAgentPoliciesHoldIn creates the admission policies of objs on a real
// API server and checks that the agent's service account of namespace ns,
// with a token of node-a, may not change a pod or a claim of node-b.
func testAgentPoliciesHoldIn(t *testing.T, objs []unstructured.Unstructured, ns string) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	admin := env.Client
	for _, name := range []string{ns, "t1"} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range objs {
		if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") {
			if err := admin.Create(ctx, &o); err != nil {
				t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}
	user := "system:serviceaccount:" + ns + ":podnet-agent"
	grantAgentTo(t, admin, user)
	onB := podOn("on-b", "node-b")
	if err := admin.Create(ctx, onB); err != nil {
		t.Fatal(err)
	}
	agentA := impersonate(t, env, rest.ImpersonationConfig{UserName: user, Groups: []string{"system:serviceaccounts", "system:authenticated"},
		Extra: map[string][]string{nodeNameExtra: {"node-a"}}})
	testenv.Eventually(t, 60*time.Second, "agent of "+ns+" held to its node's pods", func(ctx context.Context) error {
		return refused(patchPod(ctx, agentA, onB, `{"metadata":{"annotations":{"podnet.io/network-status":"[]"}}}`), "own node (node-a")
	})
	testenv.Eventually(t, 60*time.Second, "agent of "+ns+" held to its node's claims", func(ctx context.Context) error {
		return refused(agentA.Create(ctx, claimOn("data.10-0-0-9", "node-b"), client.DryRunAll), "podnet.io/node=node-a")
	})
}
