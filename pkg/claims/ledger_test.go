package claims

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"podnet.io/podnet/api/v1alpha1"
)

var macKind = Kind[*v1alpha1.MACClaim]{
	Name: "MACClaim",
	New:  func() *v1alpha1.MACClaim { return &v1alpha1.MACClaim{} },
	Holder: func(c *v1alpha1.MACClaim) Holder {
		return Holder{UID: c.Spec.Pod.UID, Network: c.Spec.Network, Interface: c.Spec.Interface}
	},
	Slot: func(c *v1alpha1.MACClaim) bool { return c.Spec.Slot != nil },
}

func macClaim(name, pod string, slot bool) *v1alpha1.MACClaim {
	c := &v1alpha1.MACClaim{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: v1alpha1.MACClaimSpec{Network: "data", Interface: "net1", Pod: v1alpha1.PodReference{Namespace: "t", Name: pod, UID: pod}}}
	if slot {
		c.Spec.Slot = new(int32)
	}
	return c
}

// TestLedgerDeleteForgetsSlotsLast: Delete takes MACs before slots, and a
// deleted claim is neither the pod's in a lagging list nor in the
// ledger's own memory, before and after its tombstone ages out.
func TestLedgerDeleteForgetsSlotsLast(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mac, slot := macClaim("mac", "p", false), macClaim("slot", "p", true)
	var order []string
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(mac.DeepCopy(), slot.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			order = append(order, obj.GetName())
			return c.Delete(ctx, obj, opts...)
		},
	}).Build()
	clk := testingclock.NewFakePassiveClock(time.Unix(1000, 0))
	l := NewLedger(macKind, clk)
	l.Remember("p", slot)
	l.Remember("p", mac)
	all := func(*v1alpha1.MACClaim) bool { return true }
	if got := l.Mine("p", nil, all); len(got) != 2 {
		t.Fatalf("before the delete the pod holds %d claims, want 2", len(got))
	}
	if err := l.Delete(context.Background(), c, []*v1alpha1.MACClaim{slot, mac}, nil); err != nil {
		t.Fatal(err)
	}
	if len(order) != 2 || order[0] != "mac" || order[1] != "slot" {
		t.Fatalf("deleted in order %v, want mac before slot", order)
	}
	lagging := []*v1alpha1.MACClaim{mac, slot}
	if got := l.Mine("p", lagging, all); len(got) != 0 {
		t.Fatalf("a lagging list gives back %d deleted claims", len(got))
	}
	clk.SetTime(clk.Now().Add(TombstoneTTL + time.Second))
	other := macClaim("other", "q", false)
	if err := l.Delete(context.Background(), c, []*v1alpha1.MACClaim{other}, nil); err != nil {
		t.Fatal(err)
	}
	if l.Released(mac.UID) {
		t.Error("the tombstone outlived TombstoneTTL")
	}
	if got := l.Mine("p", nil, all); len(got) != 0 {
		t.Fatalf("after the tombstones aged out the ledger still gives the pod %d claims", len(got))
	}
}
