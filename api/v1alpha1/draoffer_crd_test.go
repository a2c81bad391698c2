package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// TestCRDDRAOffer installs the generated CRDs in a real kube-apiserver: a
// dra block without attachmentsPerNode gets the default, and one outside
// 1-MaxDRAAttachmentsPerNode is refused naming the field.
func TestCRDDRAOffer(t *testing.T) {
	env := testenv.Shared(t)
	ctx := context.Background()
	for i, tc := range []struct {
		name string
		n    int32
		want string // "" = accepted
	}{
		{"defaulted", 0, ""},
		{"most", v1alpha1.MaxDRAAttachmentsPerNode, ""},
		{"too many", v1alpha1.MaxDRAAttachmentsPerNode + 1, "spec.networks[0].dra.attachmentsPerNode: Invalid value: 129"},
		{"negative", -1, "spec.networks[0].dra.attachmentsPerNode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1alpha1.NetworkProfile{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dra-%d", i)},
				Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{{
					Name: "data", Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-data"}, DRA: &v1alpha1.DRAOffer{AttachmentsPerNode: tc.n},
				}}},
			}
			err := env.Client.Create(ctx, p)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			want := tc.n
			if want == 0 {
				want = v1alpha1.DefaultDRAAttachmentsPerNode
			}
			if got := p.Spec.Networks[0].DRA.AttachmentsPerNode; got != want {
				t.Errorf("attachmentsPerNode stored as %d, want %d", got, want)
			}
		})
	}
}
