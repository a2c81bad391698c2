package deploy

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/test/testenv"
)

// TestPolicyClaimApprovalIsFixed: a tenant who may update ResourceClaims
// and their status in t1 may not add, change or remove a claim's podnet
// approval annotations after create, through the claim or its status;
// other annotations and labels stay theirs.
func TestPolicyClaimApprovalIsFixed(t *testing.T) {
	env := sharedPolicies(t)
	ctx := context.Background()
	admin := env.Client
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "claims"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims", "resourceclaims/status"}, Verbs: []string{"get", "create", "update", "patch"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "claims"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "claims"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "tenant"}}}
	deleteAtEnd(t, admin, role, binding)
	for _, o := range []client.Object{role, binding} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	tenant := impersonate(t, env, rest.ImpersonationConfig{UserName: "tenant", Groups: []string{"system:authenticated"}})
	claim := func(name string, annotations map[string]string) *resourcev1.ResourceClaim {
		c := &resourcev1.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: name, Annotations: annotations},
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
				{Name: "dp", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "data.telco-data"}}}}},
		}
		// No webhook runs here: the admin stands for it on CREATE.
		if err := admin.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	signed := claim("signed", map[string]string{"podnet.io/approved": `{"a":1}`, "podnet.io/approved-signature": "sig"})
	bare := claim("bare", nil)
	patch := func(c *resourcev1.ResourceClaim, p string, opts ...client.PatchOption) error {
		return tenant.Patch(ctx, c.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(p)), opts...)
	}
	testenv.Eventually(t, 60*time.Second, "policy refusing an approval edit", func(ctx context.Context) error {
		return refused(patch(signed, `{"metadata":{"annotations":{"podnet.io/approved":"probe"}}}`, client.DryRunAll), "podnet.io/approved")
	})

	for name, tc := range map[string]struct {
		c     *resourcev1.ResourceClaim
		patch string
	}{
		"change the approval":    {signed, `{"metadata":{"annotations":{"podnet.io/approved":"{\"a\":2}"}}}`},
		"remove the signature":   {signed, `{"metadata":{"annotations":{"podnet.io/approved-signature":null}}}`},
		"add an approval":        {bare, `{"metadata":{"annotations":{"podnet.io/approved":"{}","podnet.io/approved-signature":"sig"}}}`},
		"add only the signature": {bare, `{"metadata":{"annotations":{"podnet.io/approved-signature":"sig"}}}`},
	} {
		if err := refused(patch(tc.c, tc.patch), "podnet.io/approved"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	status := &resourcev1.ResourceClaim{}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(signed), status); err != nil {
		t.Fatal(err)
	}
	status.Annotations["podnet.io/approved"] = `{"a":3}`
	// The API server may also drop metadata changes on the status
	// subresource itself; either way the approval must stay.
	if err := tenant.Status().Update(ctx, status); err == nil {
		var got resourcev1.ResourceClaim
		if err := admin.Get(ctx, client.ObjectKeyFromObject(signed), &got); err != nil || got.Annotations["podnet.io/approved"] != `{"a":1}` {
			t.Errorf("approval changed through resourceclaims/status: %v (%v)", got.Annotations, err)
		}
	} else if rerr := refused(err, "podnet.io/approved"); rerr != nil {
		t.Errorf("status update: %v", rerr)
	}
	if err := patch(signed, `{"metadata":{"labels":{"app":"web"},"annotations":{"note":"mine"}}}`); err != nil {
		t.Errorf("tenant's own label and annotation on a signed claim: %v", err)
	}
}
