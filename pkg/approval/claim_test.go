package approval

import (
	"strings"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"podnet.io/podnet/api/v1alpha1"
)

// newClaim is a template's claim asking for network data of profile
// telco-data with a config, beside another driver's device, as the
// webhook sees it on CREATE (no name, UID or creationTimestamp yet).
func newClaim() *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "t1", GenerateName: "web-0-net-"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{
				{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu"}},
				{Name: "dp", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "data.telco-data", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1}},
			},
			Config: []resourcev1.DeviceClaimConfiguration{
				{Requests: []string{"gpu"}, DeviceConfiguration: resourcev1.DeviceConfiguration{Opaque: &resourcev1.OpaqueDeviceConfiguration{
					Driver: "gpu.example.com", Parameters: runtime.RawExtension{Raw: []byte(`{"sharing":"time"}`)}}}},
				{Requests: []string{"dp"}, DeviceConfiguration: resourcev1.DeviceConfiguration{Opaque: &resourcev1.OpaqueDeviceConfiguration{
					Driver: v1alpha1.DRADriver, Parameters: runtime.RawExtension{Raw: []byte(`{"interface":"dp0","mtu":9000}`)}}}},
			},
		}},
	}
}

// signedClaim is newClaim with the approval the webhook signs at issued,
// as stored: named, created a second later.
func signedClaim(t *testing.T, s Signer) *resourcev1.ResourceClaim {
	t.Helper()
	c := newClaim()
	a := sample()
	if err := BindClaim(a, c); err != nil {
		t.Fatal(err)
	}
	payload, sig, err := Sign(s, a)
	if err != nil {
		t.Fatal(err)
	}
	c.Name, c.UID = "web-0-net-x7k2p", "claim-uid"
	c.CreationTimestamp = metav1.NewTime(issued.Add(time.Second))
	c.Annotations = map[string]string{v1alpha1.ApprovedAnnotation: payload, v1alpha1.ApprovedSignatureAnnotation: sig}
	return c
}

// TestVerifyClaim: the claim the approval was signed for passes; every
// tampering fails with an error naming the claim.
func TestVerifyClaim(t *testing.T) {
	s, v := keys(t)
	_, otherKey := keys(t)
	podAppr := func(c *resourcev1.ResourceClaim) {
		a := sample()
		a.Namespace, a.ServiceAccount = "t1", ""
		a.RequestHash, _ = ClaimRequestHash(c)
		c.Annotations[v1alpha1.ApprovedAnnotation], c.Annotations[v1alpha1.ApprovedSignatureAnnotation], _ = Sign(s, a)
	}
	tests := []struct {
		name   string
		tamper func(c *resourcev1.ResourceClaim)
		keys   Verifier
		want   string
	}{
		{name: "as signed"},
		{name: "parameters respaced and reordered", tamper: func(c *resourcev1.ResourceClaim) {
			c.Spec.Devices.Config[1].Opaque.Parameters.Raw = []byte(`{ "mtu": 9000, "interface": "dp0" }`)
		}},
		{name: "another driver's parameters changed", tamper: func(c *resourcev1.ResourceClaim) {
			c.Spec.Devices.Config[0].Opaque.Parameters.Raw = []byte(`{"sharing":"none"}`)
		}},
		{name: "no approval", tamper: func(c *resourcev1.ResourceClaim) { c.Annotations = nil }, want: "has no podnet approval"},
		{name: "signature only", tamper: func(c *resourcev1.ResourceClaim) { delete(c.Annotations, v1alpha1.ApprovedAnnotation) }, want: "has no podnet approval"},
		{name: "approval edited", tamper: func(c *resourcev1.ResourceClaim) {
			c.Annotations[v1alpha1.ApprovedAnnotation] = strings.Replace(c.Annotations[v1alpha1.ApprovedAnnotation], `"mtu":9000`, `"mtu":9100`, 1)
		}, want: "signature"},
		{name: "untrusted key", keys: otherKey, want: "signature"},
		{name: "copied to another namespace", tamper: func(c *resourcev1.ResourceClaim) { c.Namespace = "t2" }, want: `issued for namespace "t1"`},
		{name: "config changed", tamper: func(c *resourcev1.ResourceClaim) {
			c.Spec.Devices.Config[1].Opaque.Parameters.Raw = []byte(`{"interface":"dp0","mtu":9000,"ips":["192.168.100.9/24"]}`)
		}, want: "answers other podnet requests"},
		{name: "class changed", tamper: func(c *resourcev1.ResourceClaim) {
			c.Spec.Devices.Requests[1].Exactly.DeviceClassName = "l2.telco-data"
		}, want: "answers other podnet requests"},
		{name: "count changed", tamper: func(c *resourcev1.ResourceClaim) { c.Spec.Devices.Requests[1].Exactly.Count = 2 }, want: "answers other podnet requests"},
		{name: "podnet request added", tamper: func(c *resourcev1.ResourceClaim) {
			c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, resourcev1.DeviceRequest{Name: "more", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "l2.telco-data"}})
		}, want: "answers other podnet requests"},
		{name: "created before the issue", tamper: func(c *resourcev1.ResourceClaim) {
			c.CreationTimestamp = metav1.NewTime(issued.Add(-MaxClockSkew - time.Second))
		}, want: "valid only for the claim it was issued to"},
		{name: "replayed later", tamper: func(c *resourcev1.ResourceClaim) {
			c.CreationTimestamp = metav1.NewTime(issued.Add(IssueWindow + time.Second))
		}, want: "valid only for the claim it was issued to"},
		{name: "no creationTimestamp", tamper: func(c *resourcev1.ResourceClaim) { c.CreationTimestamp = metav1.Time{} }, want: "no creationTimestamp"},
		{name: "pod approval", tamper: podAppr, want: "issued for a pod, not a claim"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := signedClaim(t, s)
			if tc.tamper != nil {
				tc.tamper(c)
			}
			var keys Verifier = v
			if tc.keys != nil {
				keys = tc.keys
			}
			a, err := VerifyClaim(keys, c)
			if tc.want == "" {
				if err != nil || a == nil || !a.ResourceClaim || a.ServiceAccount != "" {
					t.Fatalf("VerifyClaim: %+v, %v", a, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "resourceclaim "+c.Namespace+"/web-0-net-x7k2p") {
				t.Fatalf("err %v, want one naming the claim and %q", err, tc.want)
			}
		})
	}
}

// TestClaimApprovalIsNoPodApproval: a claim's approval put on a pod of the
// same namespace, with the claim's request text as its annotation, does
// not pass for the pod's.
func TestClaimApprovalIsNoPodApproval(t *testing.T) {
	c := newClaim()
	a := sample()
	if err := BindClaim(a, c); err != nil {
		t.Fatal(err)
	}
	text, err := ClaimRequestText(&c.Spec.Devices)
	if err != nil {
		t.Fatal(err)
	}
	p := pod(map[string]string{v1alpha1.NetworksAnnotation: text})
	p.Spec.ServiceAccountName = ""
	wantBindingErr(t, CheckBinding(a, p), "issued for a resourceclaim")
}
