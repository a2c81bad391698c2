package v1alpha1_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// TestCRDHeldClaimTakeOver: a claim held for a StatefulSet may change its
// pod UID (the next pod of the same name takes it over), and nothing
// else; a claim without a hold stays immutable, and a hold can be neither
// added nor dropped.
func TestCRDHeldClaimTakeOver(t *testing.T) {
	env := testenv.Shared(t)
	ctx := context.Background()
	hold := &v1alpha1.StatefulSetReservation{Name: "web", UID: "sts-1", ReleaseAfterSeconds: 60}
	mk := func(t *testing.T, name string, h *v1alpha1.StatefulSetReservation) *v1alpha1.IPClaim {
		c := &v1alpha1.IPClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"podnet.io/node": "n1"}},
			Spec: v1alpha1.IPClaimSpec{Network: "data", Address: "10.0.0.7", Pool: "10.0.0.0/24", Interface: "net1",
				Pod: v1alpha1.PodReference{Namespace: "t1", Name: "web-0", UID: "old"}, StatefulSet: h.DeepCopy()}}
		if err := env.Client.Create(ctx, c); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		return c
	}
	for _, tc := range []struct {
		name   string
		hold   *v1alpha1.StatefulSetReservation
		change func(*v1alpha1.IPClaim)
		want   string // "" = accepted
	}{
		{"held: new pod UID and node", hold, func(c *v1alpha1.IPClaim) { c.Spec.Pod.UID = "new"; c.Labels["podnet.io/node"] = "n2" }, ""},
		{"held: another pod name", hold, func(c *v1alpha1.IPClaim) { c.Spec.Pod.UID = "new"; c.Spec.Pod.Name = "web-1" }, "pod.name is immutable"},
		{"held: another namespace", hold, func(c *v1alpha1.IPClaim) { c.Spec.Pod.UID = "new"; c.Spec.Pod.Namespace = "t2" }, "pod.namespace is immutable"},
		{"held: another address", hold, func(c *v1alpha1.IPClaim) { c.Spec.Address = "10.0.0.8" }, "address is immutable"},
		{"held: another StatefulSet", hold, func(c *v1alpha1.IPClaim) { c.Spec.StatefulSet.UID = "sts-2" }, "statefulSet is immutable"},
		{"held: hold dropped", hold, func(c *v1alpha1.IPClaim) { c.Spec.StatefulSet = nil; c.Spec.Pod.UID = "new" }, "immutable"},
		{"held: becomes a slot", hold, func(c *v1alpha1.IPClaim) { k := int32(0); c.Spec.Address = ""; c.Spec.Slot = &k }, "immutable"},
		{"not held: new pod UID", nil, func(c *v1alpha1.IPClaim) { c.Spec.Pod.UID = "new" }, "immutable"},
		{"not held: hold added", nil, func(c *v1alpha1.IPClaim) { c.Spec.StatefulSet = hold.DeepCopy(); c.Spec.Pod.UID = "new" }, "immutable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mk(t, strings.ToLower(strings.NewReplacer(" ", "-", ":", "").Replace(tc.name)), tc.hold)
			tc.change(c)
			err := env.Client.Update(ctx, c)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want a refusal saying %q", err, tc.want)
			}
		})
	}
}

// TestCRDPersistentReleaseAfter: ipam.persistent.releaseAfter is bounded.
func TestCRDPersistentReleaseAfter(t *testing.T) {
	env := testenv.Shared(t)
	ctx := context.Background()
	for _, tc := range []struct {
		after time.Duration
		want  string
	}{
		{10 * time.Minute, ""},
		{0, ""},
		{168 * time.Hour, ""},
		{169 * time.Hour, "releaseAfter must be between 0s and 168h"},
		{-time.Second, "releaseAfter must be between 0s and 168h"},
	} {
		t.Run(tc.after.String(), func(t *testing.T) {
			p := &v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: "p" + strings.NewReplacer("-", "m", ".", "").Replace(strings.ToLower(tc.after.String()))},
				Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{{Name: "data",
					Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-data"},
					IPAM: &v1alpha1.IPAM{Pools: []string{"10.0.0.0/24"},
						Persistent: &v1alpha1.PersistentIPAM{StatefulSets: true, ReleaseAfter: metav1.Duration{Duration: tc.after}}}}}}}
			err := env.Client.Create(ctx, p)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want a refusal saying %q", err, tc.want)
			}
		})
	}
}
