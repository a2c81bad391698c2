package v1alpha1_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// TestCRDPolicyFloor installs the generated CRDs in a real kube-apiserver:
// valid policy floors are stored, and each rule refuses a bad one naming
// the field and what to fix.
func TestCRDPolicyFloor(t *testing.T) {
	env := testenv.Shared(t)
	ctx := context.Background()
	for i, tc := range []struct {
		name  string
		floor v1alpha1.PolicyFloor
		want  []string // nil = accepted
	}{
		{"same namespace in", v1alpha1.PolicyFloor{Ingress: &v1alpha1.PolicyScope{SameNamespace: true}}, nil},
		{"a tenant label both ways", v1alpha1.PolicyFloor{
			Ingress: &v1alpha1.PolicyScope{SameLabel: "example.com/tenant", CIDRs: []string{"10.9.0.0/24", "fd00:9::/64"}},
			Egress:  &v1alpha1.PolicyScope{SameLabel: "tenant"},
		}, nil},
		{"nothing allowed out", v1alpha1.PolicyFloor{Egress: &v1alpha1.PolicyScope{}}, nil},
		{"no direction", v1alpha1.PolicyFloor{}, []string{"policyFloor must set ingress, egress or both"}},
		{"a label that is no key", v1alpha1.PolicyFloor{Ingress: &v1alpha1.PolicyScope{SameLabel: "tenant name"}}, []string{"sameLabel must be a label key"}},
		{"a label with an empty prefix", v1alpha1.PolicyFloor{Ingress: &v1alpha1.PolicyScope{SameLabel: "/tenant"}}, []string{"sameLabel must be a label key"}},
		{"an address", v1alpha1.PolicyFloor{Egress: &v1alpha1.PolicyScope{CIDRs: []string{"10.9.0.1"}}}, []string{"policyFloor cidrs must be CIDRs"}},
		{"beside a VRF", v1alpha1.PolicyFloor{Ingress: &v1alpha1.PolicyScope{SameNamespace: true}}, []string{"policyFloor cannot be set on a network with vrf"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			floor := tc.floor
			p := &v1alpha1.NetworkProfile{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("floor-%d", i)},
				Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{{
					Name: "data", Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-data"}, PolicyFloor: &floor,
				}}},
			}
			if tc.name == "beside a VRF" {
				p.Spec.Networks[0].VRF = &v1alpha1.VRFPolicy{Tables: []string{"1000-1999"}}
			}
			err := env.Client.Create(ctx, p)
			expectAdmission(t, err, tc.want)
		})
	}
}
