package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// agentUser is the agent's service account as the API server names it
// (v1alpha1.AgentUser; deploy's tests do not link product code).
const agentUser = "system:serviceaccount:podnet-system:podnet-agent"

// controllerUser is podnet-controller's service account.
const controllerUser = "system:serviceaccount:podnet-system:podnet-controller"

const nodeNameExtra = "authentication.kubernetes.io/node-name"

// TestPoliciesCloseTheBackDoors installs deploy/policies on a real API
// server and tries, as a tenant with a namespaced Role (and, for its
// Namespace object, a RoleBinding as a "namespace owner" would have), every
// way around podnet's webhook they close; and, as agents of two nodes,
// every change outside the agent's node.
func TestPoliciesCloseTheBackDoors(t *testing.T) {
	env := sharedPolicies(t)
	ctx := context.Background()
	admin := env.Client
	grantAgent(t, admin)
	onA := podOn("on-a", "node-a")
	onB := podOn("on-b", "node-b")
	unbound := podOn("unbound", "")
	for _, p := range []*corev1.Pod{onA, onB, unbound} {
		if err := admin.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	tenant := impersonate(t, env, rest.ImpersonationConfig{UserName: "tenant", Groups: []string{"system:authenticated"}})
	agentA := impersonate(t, env, rest.ImpersonationConfig{UserName: agentUser, Groups: []string{"system:serviceaccounts", "system:authenticated"},
		Extra: map[string][]string{nodeNameExtra: {"node-a"}}})

	// The API server loads each policy asynchronously: wait until every
	// one refuses a probe of its own (dry runs, so nothing a probe does
	// lands before its policy is in force), then every answer is the
	// policies'.
	for _, n := range []string{"node-a", "node-b"} {
		if err := admin.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"kubernetes.io/hostname": n}, Annotations: map[string]string{"other": "x"}}}); err != nil {
			t.Fatal(err)
		}
	}
	probe := podOn("probe", "node-a")
	if err := admin.Create(ctx, probe); err != nil {
		t.Fatal(err)
	}
	privileged := podOn("probe-priv", "node-a")
	privileged.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}
	dry := client.DryRunAll
	probes := map[string]func(ctx context.Context) error{
		"pods/status": func(ctx context.Context) error {
			return tenant.Status().Patch(ctx, probe.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"podnet.io/approved":"x"}}}`)), dry)
		},
		"may not add NET_ADMIN or NET_RAW": func(ctx context.Context) error { return tenant.Create(ctx, privileged.DeepCopy(), dry) },
		"only the identities named": func(ctx context.Context) error {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t1"}}
			return tenant.Patch(ctx, ns, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"podnet.io/probe":"x"}}}`)), dry)
		},
		"own node (node-a": func(ctx context.Context) error {
			return agentA.Patch(ctx, onB.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"podnet.io/network-status":"[]"}}}`)), dry)
		},
		"podnet.io/node=node-a": func(ctx context.Context) error {
			return agentA.Create(ctx, claimOn("data.10-0-0-9", "node-b"), dry)
		},
		"Events only about pods": func(ctx context.Context) error {
			return agentA.Create(ctx, agentEvent("probe", corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: "node-b"}, "podnet-agent"), dry)
		},
		"only its own Node (node-a": func(ctx context.Context) error {
			return patchNode(ctx, agentA, "node-b", `{"metadata":{"annotations":{"podnet.io/vxlan-vnis":"7"}}}`, dry)
		},
	}
	for want, try := range probes {
		testenv.Eventually(t, 60*time.Second, "policy refusing with "+want, func(ctx context.Context) error {
			return refused(try(ctx), want)
		})
	}

	t.Run("status subresource cannot write podnet annotations", func(t *testing.T) {
		for _, ann := range []string{`"podnet.io/approved":"{}"`, `"podnet.io/network-status":"[]"`, `"podnet.io/networks":null`} {
			err := statusPatch(ctx, tenant, onA, `{"metadata":{"annotations":{`+ann+`}}}`)
			if err := refused(err, "pods/status"); err != nil {
				t.Errorf("%s: %v", ann, err)
			}
		}
		// The control: a status write that leaves the annotations alone
		// is allowed. (Any other annotation of a podnet pod is refused
		// there too: TestPolicyKeepsNRIRequiredPlugins.)
		if err := statusPatch(ctx, tenant, onA, `{"status":{"message":"x"}}`); err != nil {
			t.Errorf("status write without annotations: %v", err)
		}
	})

	t.Run("binding subresource cannot carry podnet annotations", func(t *testing.T) {
		b := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: unbound.Name, Annotations: map[string]string{v1alpha1.ApprovedAnnotation: "{}"}},
			Target:     corev1.ObjectReference{Kind: "Node", Name: "node-a"},
		}
		if err := refused(tenant.SubResource("binding").Create(ctx, unbound, b), "pods/binding"); err != nil {
			t.Error(err)
		}
		var got corev1.Pod
		if err := admin.Get(ctx, client.ObjectKeyFromObject(unbound), &got); err != nil {
			t.Fatal(err)
		}
		if _, ok := got.Annotations[v1alpha1.ApprovedAnnotation]; ok || got.Spec.NodeName != "" {
			t.Errorf("binding went through: node %q annotations %v", got.Spec.NodeName, got.Annotations)
		}
	})

	t.Run("ephemeralcontainers subresource cannot write podnet annotations", func(t *testing.T) {
		// The API server keeps only the ephemeral containers of an update
		// through this subresource, before validating admission runs: the
		// policies never see an annotation edit there. What a tenant gets
		// through it is a container in a podnet pod, and the policy refuses
		// one that keeps the runtime's NET_RAW.
		var cur corev1.Pod
		if err := admin.Get(ctx, client.ObjectKeyFromObject(onA), &cur); err != nil {
			t.Fatal(err)
		}
		cur.Annotations[v1alpha1.ApprovedAnnotation] = "{}"
		cur.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg", Image: "busybox"}}}
		if err := refused(tenant.SubResource("ephemeralcontainers").Update(ctx, cur.DeepCopy()), "must drop NET_RAW"); err != nil {
			t.Error(err)
		}
		// With NET_RAW dropped the update is allowed: the container is
		// added and the annotation, restored by the API server, is not.
		// podnet relies on that; this fails if an API server stops doing it.
		cur.Spec.EphemeralContainers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}}}
		if err := tenant.SubResource("ephemeralcontainers").Update(ctx, cur.DeepCopy()); err != nil {
			t.Fatalf("an ephemeral container dropping NET_RAW: %v", err)
		}
		var got corev1.Pod
		if err := admin.Get(ctx, client.ObjectKeyFromObject(onA), &got); err != nil {
			t.Fatal(err)
		}
		if _, ok := got.Annotations[v1alpha1.ApprovedAnnotation]; ok || len(got.Spec.EphemeralContainers) != 1 {
			t.Errorf("through pods/ephemeralcontainers: annotations %v, %d ephemeral containers; want no %s and the one container",
				got.Annotations, len(got.Spec.EphemeralContainers), v1alpha1.ApprovedAnnotation)
		}
	})

	t.Run("no network privilege in podnet pods", func(t *testing.T) {
		caps := func(add ...corev1.Capability) *corev1.SecurityContext {
			return &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: add}}
		}
		cases := map[string]func(p *corev1.Pod){
			"NET_ADMIN container": func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext = caps("NET_ADMIN") },
			"net_raw container":   func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext = caps("net_raw") },
			"CAP_NET_ADMIN":       func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext = caps("CAP_NET_ADMIN") },
			"ALL":                 func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext = caps("ALL") },
			"SYS_ADMIN":           func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext = caps("SYS_ADMIN") },
			"privileged container": func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
			},
			"NET_RAW init container": func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", SecurityContext: caps("NET_RAW")}}
			},
		}
		for name, mutate := range cases {
			p := podOn("priv", "node-a")
			mutate(p)
			if err := refused(tenant.Create(ctx, p), "may not add NET_ADMIN or NET_RAW"); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		// Without a podnet request the policy does not apply.
		plain := podOn("plain-admin", "node-a")
		plain.Annotations = nil
		plain.Spec.Containers[0].SecurityContext = caps("NET_ADMIN")
		if err := tenant.Create(ctx, plain); err != nil {
			t.Errorf("pod without podnet request: %v", err)
		}
		// An ephemeral container with NET_ADMIN added to a podnet pod.
		var cur corev1.Pod
		if err := admin.Get(ctx, client.ObjectKeyFromObject(onB), &cur); err != nil {
			t.Fatal(err)
		}
		cur.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "spoof", Image: "busybox", SecurityContext: caps("NET_ADMIN")}}}
		if err := refused(tenant.SubResource("ephemeralcontainers").Update(ctx, &cur), "ephemeral container"); err != nil {
			t.Error(err)
		}
		// An ephemeral container that asks for nothing would still get
		// the runtime's default NET_RAW: it must drop it.
		cur.Spec.EphemeralContainers[0].SecurityContext = nil
		if err := refused(tenant.SubResource("ephemeralcontainers").Update(ctx, &cur), "must drop NET_RAW"); err != nil {
			t.Error(err)
		}
		cur.Spec.EphemeralContainers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"net_raw"}}}
		if err := tenant.SubResource("ephemeralcontainers").Update(ctx, &cur); err != nil {
			t.Errorf("an ephemeral container dropping NET_RAW: %v", err)
		}
	})

	t.Run("legacy bindings resource cannot carry podnet annotations", func(t *testing.T) { testLegacyBindings(t, admin, tenant) })
	t.Run("an ephemeral container dropping CAP_NET_RAW keeps NET_RAW", func(t *testing.T) { testPrefixedDrop(t, admin, tenant) })

	t.Run("tenant cannot relabel its namespace", func(t *testing.T) {
		restoreAtEnd(t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t1"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "podnet-system", Name: "podnet-namespace-label-admins"}})
		cases := map[string]string{
			"opt out":               `{"metadata":{"labels":{"podnet.io/enabled":null}}}`,
			"join another selector": `{"metadata":{"labels":{"podnet.io/tenant":"other"}}}`,
			"add a podnet label":    `{"metadata":{"labels":{"podnet.io/extra":"x"}}}`,
		}
		for name, patch := range cases {
			err := patchNamespace(ctx, tenant, "t1", patch)
			if err := refused(err, "only the identities named in ConfigMap podnet-system/podnet-namespace-label-admins"); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		if err := patchNamespace(ctx, tenant, "t1", `{"metadata":{"labels":{"team":"blue"}}}`); err != nil {
			t.Errorf("a label outside podnet.io/: %v", err)
		}
		if err := patchNamespace(ctx, admin, "t1", `{"metadata":{"labels":{"podnet.io/tenant":"telco2"}}}`); err != nil {
			t.Errorf("cluster admin: %v", err)
		}
		// Delegation: a group named in the ConfigMap may.
		if err := patchConfigMap(ctx, admin, `{"data":{"groups":"system:masters, tenant-admins"}}`); err != nil {
			t.Fatal(err)
		}
		delegated := impersonate(t, env, rest.ImpersonationConfig{UserName: "tenant", Groups: []string{"tenant-admins", "system:authenticated"}})
		testenv.Eventually(t, 30*time.Second, "delegated group may relabel", func(ctx context.Context) error {
			return patchNamespace(ctx, delegated, "t1", `{"metadata":{"labels":{"podnet.io/tenant":"telco"}}}`)
		})
	})

	t.Run("agent changes only claims of its node", func(t *testing.T) {
		own, other := claimOn("data.10-0-0-1", "node-a"), claimOn("data.10-0-0-2", "node-b")
		if err := agentA.Create(ctx, own); err != nil {
			t.Errorf("agent of node-a creating a claim of node-a: %v", err)
		}
		if err := refused(agentA.Create(ctx, claimOn("data.10-0-0-3", "node-b")), "podnet.io/node=node-a"); err != nil {
			t.Errorf("agent of node-a creating a claim of node-b: %v", err)
		}
		slot := claimOn("10-0-0-0-24.t1.0", "node-b")
		slot.Spec.Address, slot.Spec.Pool, slot.Spec.Slot = "", "10.0.0.0/24", ptr(int32(0))
		if err := refused(agentA.Create(ctx, slot), "podnet.io/node=node-a"); err != nil {
			t.Errorf("agent of node-a creating a quota slot of node-b: %v", err)
		}
		if err := admin.Create(ctx, other); err != nil {
			t.Fatal(err)
		}
		if err := refused(agentA.Delete(ctx, other.DeepCopy()), "podnet.io/node=node-a"); err != nil {
			t.Errorf("agent of node-a deleting a claim of node-b: %v", err)
		}
		if err := agentA.Delete(ctx, own.DeepCopy()); err != nil {
			t.Errorf("agent of node-a deleting its own claim: %v", err)
		}
	})

	t.Run("agent creates and deletes only pods of its node, should its role ever grant it", func(t *testing.T) {
		// The agent's role grants neither; a role that did (a mistake of
		// the install) still reaches only the agent's own node.
		extra := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agent-too-broad"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "delete"}},
		}}
		bound := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "agent-too-broad"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: extra.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: agentUser}}}
		deleteAtEnd(t, admin, extra, bound)
		for _, o := range []client.Object{extra, bound} {
			if err := admin.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		dry := client.DryRunAll
		testenv.Eventually(t, 30*time.Second, "the broad role in force", func(ctx context.Context) error {
			return agentA.Create(ctx, podOn("made-on-a", "node-a"), dry)
		})
		// The API server loads policies asynchronously; sharedPolicies
		// created this one with the others.
		testenv.Eventually(t, 30*time.Second, "agent of node-a creating a pod on node-b refused", func(ctx context.Context) error {
			return refused(agentA.Create(ctx, podOn("made-on-b", "node-b"), dry), "own node (node-a")
		})
		if err := refused(agentA.Delete(ctx, onB.DeepCopy(), dry), "own node (node-a"); err != nil {
			t.Errorf("agent of node-a deleting a pod of node-b: %v", err)
		}
		if err := agentA.Delete(ctx, onA.DeepCopy(), dry); err != nil {
			t.Errorf("agent of node-a deleting a pod of node-a: %v", err)
		}
		for _, o := range []client.Object{bound, extra} {
			if err := admin.Delete(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("controller writes only its own Lease", func(t *testing.T) {
		grantController(t, admin)
		controller := impersonate(t, env, rest.ImpersonationConfig{UserName: controllerUser, Groups: []string{"system:serviceaccounts", "system:authenticated"}})
		own := lease("podnet-system", "podnet-controller")
		others := []*coordinationv1.Lease{lease("kube-node-lease", "node-a"), lease("kube-system", "kube-scheduler"), lease("podnet-system", "other")}
		for _, l := range append([]*coordinationv1.Lease{own}, others...) {
			deleteAtEnd(t, admin, l)
			if err := admin.Create(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
		take := func(ctx context.Context, l *coordinationv1.Lease) error {
			var cur coordinationv1.Lease
			if err := controller.Get(ctx, client.ObjectKeyFromObject(l), &cur); err != nil {
				return err
			}
			cur.Spec.HolderIdentity = ptr("attacker")
			return controller.Update(ctx, &cur)
		}
		// RBAC is served from an informer: wait for the binding.
		testenv.Eventually(t, 30*time.Second, "controller renews its own Lease", func(ctx context.Context) error { return take(ctx, own) })
		for _, l := range others {
			if err := forbidden(take(ctx, l)); err != nil {
				t.Errorf("controller takes Lease %s/%s: %v", l.Namespace, l.Name, err)
			}
			if err := forbidden(controller.Patch(ctx, l.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"holderIdentity":"attacker"}}`)))); err != nil {
				t.Errorf("controller patches Lease %s/%s: %v", l.Namespace, l.Name, err)
			}
			if err := forbidden(controller.Delete(ctx, l.DeepCopy())); err != nil {
				t.Errorf("controller deletes Lease %s/%s: %v", l.Namespace, l.Name, err)
			}
		}
		for _, l := range []*coordinationv1.Lease{lease("kube-system", "new-election"), lease("podnet-system", "new")} {
			if err := forbidden(controller.Create(ctx, l)); err != nil {
				t.Errorf("controller creates Lease %s/%s: %v", l.Namespace, l.Name, err)
			}
		}
		if err := forbidden(controller.Create(ctx, claimOn("10-0-0-7", "node-a"))); err != nil {
			t.Errorf("controller creates an IPClaim: %v", err)
		}
	})

	t.Run("agent writes Events only about pods, as itself", func(t *testing.T) {
		pod := corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "t1", Name: onA.Name, UID: onA.UID}
		if err := agentA.Create(ctx, agentEvent("attached", pod, "podnet-agent")); err != nil {
			t.Errorf("agent writing an Event about a pod: %v", err)
		}
		cases := map[string]*eventsv1.Event{
			"about a node":           agentEvent("node", corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: "node-b"}, "podnet-agent"),
			"about a deployment":     agentEvent("deploy", corev1.ObjectReference{Kind: "Deployment", APIVersion: "apps/v1", Namespace: "t1", Name: "web"}, "podnet-agent"),
			"in the kubelet's name":  agentEvent("kubelet", pod, "kubelet"),
			"in cert-manager's name": agentEvent("cm", pod, "cert-manager"),
		}
		for what, e := range cases {
			if err := refused(agentA.Create(ctx, e), "Events only about pods"); err != nil {
				t.Errorf("agent writing an Event %s: %v", what, err)
			}
		}
		// The core Event API is not the agent's at all.
		core := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "core"}, InvolvedObject: pod, Reason: "X",
			Source: corev1.EventSource{Component: "podnet-agent"}}
		if err := forbidden(agentA.Create(ctx, core)); err != nil {
			t.Errorf("agent writing a core Event: %v", err)
		}
	})

	t.Run("agent changes only the VNI and uninstall annotations of its node", func(t *testing.T) {
		vnis := func(v string) string { return `{"metadata":{"annotations":{"podnet.io/vxlan-vnis":` + v + `}}}` }
		if err := patchNode(ctx, agentA, "node-a", vnis(`"7,4242"`)); err != nil {
			t.Errorf("agent of node-a publishing its VNIs: %v", err)
		}
		if err := patchNode(ctx, agentA, "node-a", vnis("null")); err != nil {
			t.Errorf("agent of node-a removing its VNIs: %v", err)
		}
		if err := refused(patchNode(ctx, agentA, "node-b", vnis(`"7"`)), "only its own Node (node-a"); err != nil {
			t.Errorf("agent of node-a publishing VNIs for node-b: %v", err)
		}
		for what, patch := range map[string]string{
			"a label":            `{"metadata":{"labels":{"kubernetes.io/hostname":"node-b"}}}`,
			"another annotation": `{"metadata":{"annotations":{"other":"y"}}}`,
			"a new annotation":   `{"metadata":{"annotations":{"podnet.io/other":"y"}}}`,
			"the spec":           `{"spec":{"unschedulable":true}}`,
		} {
			if err := refused(patchNode(ctx, agentA, "node-a", patch), "only the podnet.io/vxlan-vnis and podnet.io/agent-uninstalled annotations"); err != nil {
				t.Errorf("agent of node-a changing %s of its node: %v", what, err)
			}
		}
		if err := refused(patchNode(ctx, agentA, "node-a", vnis(`"7;rm"`)), "comma-separated list of VNIs"); err != nil {
			t.Errorf("agent of node-a publishing garbage: %v", err)
		}
		done := func(v string) string { return `{"metadata":{"annotations":{"podnet.io/agent-uninstalled":` + v + `}}}` }
		if err := patchNode(ctx, agentA, "node-a", done(`"0b5c1a6e-1f7e-4d1a-9c55-3f1d2e0a7b11"`)); err != nil {
			t.Errorf("agent of node-a reporting its uninstall: %v", err)
		}
		if err := patchNode(ctx, agentA, "node-a", done("null")); err != nil {
			t.Errorf("agent of node-a taking its report back: %v", err)
		}
		if err := refused(patchNode(ctx, agentA, "node-b", done(`"0b5c1a6e"`)), "only its own Node (node-a"); err != nil {
			t.Errorf("agent of node-a reporting node-b uninstalled: %v", err)
		}
		if err := refused(patchNode(ctx, agentA, "node-a", done(`"done; really"`)), "the UID of the agent's DaemonSet"); err != nil {
			t.Errorf("agent of node-a reporting garbage: %v", err)
		}
	})

	t.Run("agent changes only pods of its node", func(t *testing.T) {
		status := `{"metadata":{"annotations":{"podnet.io/network-status":"[]"}}}`
		if err := patchPod(ctx, agentA, onA, status); err != nil {
			t.Errorf("agent of node-a on its own pod: %v", err)
		}
		if err := refused(patchPod(ctx, agentA, onB, status), "own node (node-a"); err != nil {
			t.Errorf("agent of node-a on node-b's pod: %v", err)
		}
		if err := refused(statusPatch(ctx, agentA, onB, `{"status":{"conditions":[{"type":"podnet.io/networks-ready","status":"True"}]}}`), "own node"); err != nil {
			t.Errorf("agent of node-a on node-b's pod status: %v", err)
		}
		unboundToken := impersonate(t, env, rest.ImpersonationConfig{UserName: agentUser, Groups: []string{"system:serviceaccounts", "system:authenticated"}})
		if err := refused(patchPod(ctx, unboundToken, onA, status), "its token names no node"); err != nil {
			t.Errorf("agent token without a node: %v", err)
		}
	})
}

func claimOn(name, node string) *v1alpha1.IPClaim {
	return &v1alpha1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.NodeLabel: node}},
		Spec: v1alpha1.IPClaimSpec{Network: "data", Address: "10.0.0.1", Interface: "net1",
			Pod: v1alpha1.PodReference{Namespace: "t1", Name: "p", UID: "u"}},
	}
}

func podOn(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: name, Annotations: map[string]string{v1alpha1.NetworksAnnotation: "data"}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
}

// grantTenant gives user "tenant" what a namespace owner has: pods and
// their subresources in t1, and its own Namespace object.
func grantTenant(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	objs := []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "owner"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods", "pods/status", "pods/ephemeralcontainers", "pods/binding", "bindings"}, Verbs: []string{"get", "list", "create", "update", "patch"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "owner"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "owner"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "tenant"}}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "namespace-owner"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "update", "patch"}},
		}},
		// A RoleBinding in t1 grants the rules on the Namespace t1 itself.
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "namespace-owner"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "namespace-owner"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "tenant"}}},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}

// grantAgent binds the generated agent ClusterRole to the agent's user.
func grantAgent(t *testing.T, c client.Client) {
	t.Helper()
	grantAgentTo(t, c, agentUser)
}

// grantAgentTo binds the generated agent ClusterRole to user. The Role
// beside it (reading the agent's own DaemonSet) plays no part in what the
// policies allow. It writes over the grant an earlier test left on the
// shared API server (ensure): deleted between tests, a grant could linger
// in RBAC's cache into the next test, or be missing from it at its start.
func grantAgentTo(t *testing.T, c client.Client, user string) {
	t.Helper()
	var role rbacv1.ClusterRole
	var own rbacv1.Role
	readRoles(t, filepath.Join("rbac", "agent", "role.yaml"), &role, &own)
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "podnet-agent"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	for _, o := range []client.Object{&role, binding} {
		if err := ensure(context.Background(), c, o); err != nil {
			t.Fatal(err)
		}
	}
}

// grantController creates the generated controller ClusterRole and Role
// and binds them to the controller's user, as deploy/podnet does, over
// those an earlier test left (ensure).
func grantController(t *testing.T, c client.Client) {
	t.Helper()
	var cluster rbacv1.ClusterRole
	var own rbacv1.Role
	readRoles(t, filepath.Join("rbac", "controller", "role.yaml"), &cluster, &own)
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: controllerUser}}
	objs := []client.Object{&cluster, &own,
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: cluster.Name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cluster.Name}, Subjects: subjects},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: own.Namespace, Name: own.Name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: own.Name}, Subjects: subjects},
	}
	for _, o := range objs {
		if err := ensure(context.Background(), c, o); err != nil {
			t.Fatal(err)
		}
	}
}

// readRoles decodes the YAML documents of a generated role file, in order,
// into into.
func readRoles(t *testing.T, path string, into ...any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(strings.TrimPrefix(string(data), "---\n"), "\n---\n")
	if len(docs) != len(into) {
		t.Fatalf("%s holds %d documents, want %d", path, len(docs), len(into))
	}
	for i, d := range docs {
		if err := yaml.Unmarshal([]byte(d), into[i]); err != nil {
			t.Fatalf("%s document %d: %v", path, i, err)
		}
	}
}

func impersonate(t *testing.T, env *testenv.Env, as rest.ImpersonationConfig) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = as
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func statusPatch(ctx context.Context, c client.Client, p *corev1.Pod, patch string) error {
	return c.Status().Patch(ctx, p.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)))
}

func patchPod(ctx context.Context, c client.Client, p *corev1.Pod, patch string) error {
	return c.Patch(ctx, p.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)))
}

func patchNode(ctx context.Context, c client.Client, name, patch string, opts ...client.PatchOption) error {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return c.Patch(ctx, n, client.RawPatch(types.MergePatchType, []byte(patch)), opts...)
}

func patchNamespace(ctx context.Context, c client.Client, name, patch string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return c.Patch(ctx, ns, client.RawPatch(types.MergePatchType, []byte(patch)))
}

func patchConfigMap(ctx context.Context, c client.Client, patch string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "podnet-system", Name: "podnet-namespace-label-admins"}}
	return c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// agentEvent is an events.k8s.io Event in namespace t1 (or the regarded
// object's) about regarding, reported by controller.
func agentEvent(name string, regarding corev1.ObjectReference, controller string) *eventsv1.Event {
	ns := regarding.Namespace
	if ns == "" {
		ns = "default"
	}
	return &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Regarding: regarding,
		EventTime: metav1.NowMicro(), Reason: "Attached", Action: "Attach", Type: corev1.EventTypeNormal, Note: "x",
		ReportingController: controller, ReportingInstance: controller + "-node-a"}
}

func lease(ns, name string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// forbidden is nil when err is an authorization refusal.
func forbidden(err error) error {
	if !apierrors.IsForbidden(err) || strings.Contains(fmt.Sprint(err), "ValidatingAdmissionPolicy") {
		return fmt.Errorf("got %v, want forbidden by RBAC", err)
	}
	return nil
}

// refused is nil when err is a refusal by an admission policy whose
// message contains want.
func refused(err error, want string) error {
	switch {
	case err == nil:
		return fmt.Errorf("allowed, want refused (%q)", want)
	case !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") || !strings.Contains(err.Error(), want):
		return fmt.Errorf("refused for another reason: %v (want a policy refusal mentioning %q)", err, want)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
