package v1alpha1_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// TestCRDVRFTables installs the generated CRDs in a real kube-apiserver:
// valid vrf.tables are stored, and each rule refuses bad ones naming the
// field and what to fix.
func TestCRDVRFTables(t *testing.T) {
	env := testenv.Shared(t)
	ctx := context.Background()
	for i, tc := range []struct {
		name   string
		tables []string
		want   []string // nil = accepted
	}{
		{"valid", []string{"1000-1999", "4000", "256-4294967295"}, nil},
		{"empty", []string{}, []string{"spec.networks[0].vrf.tables"}},
		{"descending", []string{"2000-1000"}, []string{"vrf.tables must be table ids or ascending ranges within 1-4294967295"}},
		{"zero", []string{"0"}, []string{"within 1-4294967295"}},
		{"above 32 bits", []string{"4294967296"}, []string{"within 1-4294967295"}},
		{"the main table", []string{"254"}, []string{"vrf.tables must not include 252-255"}},
		{"a range over the kernel's tables", []string{"100-300"}, []string{"must not include 252-255"}},
		{"not a number", []string{"red"}, []string{"spec.networks[0].vrf.tables[0]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1alpha1.NetworkProfile{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("vrf-%d", i)},
				Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{{
					Name: "data", Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-data"}, VRF: &v1alpha1.VRFPolicy{Tables: tc.tables},
				}}},
			}
			err := env.Client.Create(ctx, p)
			expectAdmission(t, err, tc.want)
		})
	}
}
