package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// TestIPClaimCRDValidation: a claim holds either an address or a quota
// slot of a named pool, never both and never neither.
func TestIPClaimCRDValidation(t *testing.T) {
	env := testenv.Shared(t)
	ctx := context.Background()
	slot := int32(3)
	pod := v1alpha1.PodReference{Namespace: "t1", Name: "p", UID: "u"}
	for _, tc := range []struct {
		name string
		spec v1alpha1.IPClaimSpec
		want string // "" = accepted
	}{
		{"address", v1alpha1.IPClaimSpec{Network: "data", Address: "10.0.0.7", Pool: "10.0.0.0/24", Pod: pod, Interface: "net1"}, ""},
		{"legacy address without pool", v1alpha1.IPClaimSpec{Network: "data", Address: "10.0.0.8", Pod: pod, Interface: "net1"}, ""},
		{"slot", v1alpha1.IPClaimSpec{Network: "data", Pool: "10.0.0.0/24", Slot: &slot, Pod: pod, Interface: "net1"}, ""},
		{"both", v1alpha1.IPClaimSpec{Network: "data", Address: "10.0.0.9", Pool: "10.0.0.0/24", Slot: &slot, Pod: pod, Interface: "net1"}, "exactly one of address and slot"},
		{"neither", v1alpha1.IPClaimSpec{Network: "data", Pool: "10.0.0.0/24", Pod: pod, Interface: "net1"}, "exactly one of address and slot"},
		{"slot without pool", v1alpha1.IPClaimSpec{Network: "data", Slot: &slot, Pod: pod, Interface: "net1"}, "a quota slot names its pool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &v1alpha1.IPClaim{ObjectMeta: metav1.ObjectMeta{Name: strings.ReplaceAll(tc.name, " ", "-")}, Spec: tc.spec}
			err := env.Client.Create(ctx, c)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want a refusal saying %q", err, tc.want)
			}
		})
	}
}
