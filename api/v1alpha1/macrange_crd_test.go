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

// TestCRDMACRange installs the generated CRDs in a real kube-apiserver: a
// valid macRange is stored, and each rule refuses a bad one naming the
// field and what to fix; a MACClaim is immutable and holds a MAC or a
// slot.
func TestCRDMACRange(t *testing.T) {
	env := testenv.Shared(t)
	ctx := context.Background()
	profile := func(i int, r v1alpha1.MACRange) *v1alpha1.NetworkProfile {
		return &v1alpha1.NetworkProfile{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("mac-%d", i)},
			Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{{
				Name: "data", Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-data"}, MACRange: &r,
			}}},
		}
	}
	q := func(n int32) *int32 { return &n }
	for i, tc := range []struct {
		name string
		r    v1alpha1.MACRange
		want []string // "" = accepted
	}{
		{"valid", v1alpha1.MACRange{RangeStart: "02:00:00:00:00:00", RangeEnd: "02:00:00:00:FF:FF", MaxPerNamespace: q(16)}, nil},
		{"start above end", v1alpha1.MACRange{RangeStart: "02:00:00:00:01:00", RangeEnd: "02:00:00:00:00:ff"}, []string{"macRange.rangeStart must not be above macRange.rangeEnd"}},
		{"multicast start", v1alpha1.MACRange{RangeStart: "01:00:5e:00:00:00", RangeEnd: "02:00:00:00:00:ff"}, []string{"spec.networks[0].macRange.rangeStart", "rangeStart must be a unicast MAC address"}},
		{"multicast end", v1alpha1.MACRange{RangeStart: "02:00:00:00:00:00", RangeEnd: "03:00:00:00:00:ff"}, []string{"spec.networks[0].macRange.rangeEnd", "rangeEnd must be a unicast MAC address"}},
		{"not a MAC", v1alpha1.MACRange{RangeStart: "02-00-00-00-00-00", RangeEnd: "02:00:00:00:00:ff"}, []string{"rangeStart must be a MAC address written aa:bb:cc:dd:ee:ff"}},
		{"quota 0", v1alpha1.MACRange{RangeStart: "02:00:00:00:00:00", RangeEnd: "02:00:00:00:00:ff", MaxPerNamespace: q(0)}, []string{"maxPerNamespace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := env.Client.Create(ctx, profile(i, tc.r))
			expectAdmission(t, err, tc.want)
		})
	}

	k := int32(1)
	pod := v1alpha1.PodReference{Namespace: "default", Name: "p", UID: "u"}
	for name, spec := range map[string]v1alpha1.MACClaimSpec{
		"both":    {Network: "data", MAC: "02:00:00:00:00:01", Slot: &k, Pod: pod, Interface: "net1"},
		"neither": {Network: "data", Pod: pod, Interface: "net1"},
	} {
		err := env.Client.Create(ctx, &v1alpha1.MACClaim{ObjectMeta: metav1.ObjectMeta{Name: "x-" + name}, Spec: spec})
		if err == nil || !strings.Contains(err.Error(), "exactly one of mac and slot must be set") {
			t.Errorf("MACClaim with %s of mac and slot: %v", name, err)
		}
	}
	c := &v1alpha1.MACClaim{ObjectMeta: metav1.ObjectMeta{Name: "02-00-00-00-00-01"},
		Spec: v1alpha1.MACClaimSpec{Network: "data", MAC: "02:00:00:00:00:01", Pod: pod, Interface: "net1"}}
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Spec.Pod.UID = "another"
	if err := env.Client.Update(ctx, c); err == nil || !strings.Contains(err.Error(), "a MACClaim is immutable") {
		t.Errorf("changing a MACClaim's holder: %v", err)
	}
}
