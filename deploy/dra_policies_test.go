package deploy

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/test/testenv"
)

// sliceOf is a ResourceSlice of driver in node's pool, as the agent's
// kubelet plugin publishes it.
func sliceOf(name, driver, node string) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.ResourceSliceSpec{
		Driver: driver, NodeName: ptr(node), Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1},
		Devices: []resourceapi.Device{{Name: "data-0"}},
	}}
}

// TestPolicyAgentWritesOnlyItsNodesResourceSlices: with the generated
// agent role and deploy/policies, the agent of node-a creates, updates and
// deletes the podnet.io ResourceSlices of node-a; it may not create one
// for node-b, move its own to node-b, update or delete node-b's, publish
// another driver's slice on its own node, or act with a token that names
// no node.
func TestPolicyAgentWritesOnlyItsNodesResourceSlices(t *testing.T) {
	env := sharedPolicies(t)
	ctx := context.Background()
	admin := env.Client
	grantAgent(t, admin)
	agentAs := func(extra map[string][]string) client.Client {
		return impersonate(t, env, rest.ImpersonationConfig{UserName: agentUser, Groups: []string{"system:serviceaccounts", "system:authenticated"}, Extra: extra})
	}
	agentA := agentAs(map[string][]string{nodeNameExtra: {"node-a"}})
	testenv.Eventually(t, 60*time.Second, "policy refusing a slice of node-b", func(ctx context.Context) error {
		return refused(agentA.Create(ctx, sliceOf("probe", "podnet.io", "node-b"), client.DryRunAll), "spec.nodeName node-a")
	})
	own := sliceOf("node-a-podnet.io-1", "podnet.io", "node-a")
	if err := agentA.Create(ctx, own); err != nil {
		t.Fatalf("agent of node-a publishing its own slice: %v", err)
	}
	own.Spec.Devices = append(own.Spec.Devices, resourceapi.Device{Name: "data-1"})
	if err := agentA.Update(ctx, own); err != nil {
		t.Errorf("agent of node-a updating its own slice: %v", err)
	}
	other := sliceOf("node-b-podnet.io-1", "podnet.io", "node-b")
	if err := admin.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := refused(agentA.Create(ctx, sliceOf("x", "podnet.io", "node-b")), "spec.nodeName node-a"); err != nil {
		t.Errorf("agent of node-a publishing a slice of node-b: %v", err)
	}
	if err := refused(agentA.Create(ctx, sliceOf("y", "gpu.example.com", "node-a")), "driver podnet.io"); err != nil {
		t.Errorf("agent of node-a publishing another driver's slice: %v", err)
	}
	moved := own.DeepCopy()
	moved.Spec.NodeName = ptr("node-b")
	if err := agentA.Update(ctx, moved); err == nil {
		t.Errorf("agent of node-a moving its slice to node-b: allowed")
	}
	theirs := other.DeepCopy()
	theirs.Spec.Devices = nil
	if err := refused(agentA.Update(ctx, theirs), "spec.nodeName node-a"); err != nil {
		t.Errorf("agent of node-a emptying node-b's slice: %v", err)
	}
	if err := refused(agentA.Delete(ctx, other), "spec.nodeName node-a"); err != nil {
		t.Errorf("agent of node-a deleting node-b's slice: %v", err)
	}
	if err := refused(agentAs(nil).Create(ctx, sliceOf("z", "podnet.io", "node-a")), "its token names no node"); err != nil {
		t.Errorf("agent without a node in its token: %v", err)
	}
	if err := agentA.Delete(ctx, own); err != nil {
		t.Errorf("agent of node-a deleting its own slice: %v", err)
	}
}

// TestTenantCannotWriteDeviceClasses: a tenant with the built-in admin
// role in its namespace (what a namespace's owner usually holds) may
// neither create a DeviceClass (which would select podnet's devices on
// its own terms) nor change or delete the controller's, nor publish a
// ResourceSlice: both are cluster-scoped and RBAC gives them to no tenant.
func TestTenantCannotWriteDeviceClasses(t *testing.T) {
	env := sharedPolicies(t)
	ctx := context.Background()
	admin := env.Client
	tenantAdmin := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "tenant-admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "tenant"}}}
	deleteAtEnd(t, admin, tenantAdmin)
	if err := admin.Create(ctx, tenantAdmin); err != nil {
		t.Fatal(err)
	}
	tenant := impersonate(t, env, rest.ImpersonationConfig{UserName: "tenant", Groups: []string{"system:authenticated"}})
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "data.telco", Labels: map[string]string{"podnet.io/profile": "telco"}},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "podnet.io"`}}}}}
	if err := tenant.Create(ctx, class.DeepCopy()); !apierrors.IsForbidden(err) {
		t.Errorf("tenant creating a DeviceClass: %v, want forbidden", err)
	}
	if err := admin.Create(ctx, class); err != nil {
		t.Fatal(err)
	}
	changed := class.DeepCopy()
	changed.Spec.Selectors[0].CEL.Expression = "true"
	if err := tenant.Update(ctx, changed); !apierrors.IsForbidden(err) {
		t.Errorf("tenant changing a DeviceClass: %v, want forbidden", err)
	}
	if err := tenant.Delete(ctx, class); !apierrors.IsForbidden(err) {
		t.Errorf("tenant deleting a DeviceClass: %v, want forbidden", err)
	}
	if err := tenant.Create(ctx, sliceOf("t", "podnet.io", "node-a")); !apierrors.IsForbidden(err) {
		t.Errorf("tenant publishing a ResourceSlice: %v, want forbidden", err)
	}
}
