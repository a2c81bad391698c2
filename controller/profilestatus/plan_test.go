package profilestatus

import (
	"net/netip"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

func TestPlanStatus(t *testing.T) {
	p := &v1alpha1.NetworkProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Generation: 3},
		Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{
			{Name: "data", IPAM: &v1alpha1.IPAM{Pools: []string{"10.0.0.0/29", "fd00::/64"}, Gateways: []string{"10.0.0.1"}}},
			{Name: "l2"},
			{Name: "small", IPAM: &v1alpha1.IPAM{Pools: []string{"10.1.0.0/30"}}},
		}},
	}
	used := map[string]int64{"data/10.0.0.0/29": 2, "data/fd00::/64": 7, "small/10.1.0.0/30": 2}
	inUse := func(n string, pool netip.Prefix) int64 { return used[n+"/"+pool.String()] }
	t0 := metav1.NewTime(time.Unix(1000, 0))

	st := planStatus(p, nil, nil, inUse, t0)
	c := meta.FindStatusCondition(st.Conditions, ConditionReady)
	if st.ObservedGeneration != 3 || c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonValid || !c.LastTransitionTime.Equal(&t0) {
		t.Fatalf("status %+v", st)
	}
	want := []v1alpha1.NetworkUsage{
		{Name: "data", Pools: []v1alpha1.PoolUsage{{Pool: "10.0.0.0/29", InUse: 2, Available: 3}, {Pool: "fd00::/64", InUse: 7, Available: maxAvailable - 7}}},
		{Name: "small", Pools: []v1alpha1.PoolUsage{{Pool: "10.1.0.0/30", InUse: 2, Available: 0}}},
	}
	if !apiequality.Semantic.DeepEqual(st.Networks, want) || st.AddressesInUse != 11 || st.LeastAvailable == nil || *st.LeastAvailable != 0 {
		t.Fatalf("usage %+v (in use %d, least %v), want %+v", st.Networks, st.AddressesInUse, st.LeastAvailable, want)
	}

	// Planned again later from the status it now has: nothing changes, so
	// nothing is written.
	p.Status = st
	again := planStatus(p, nil, nil, inUse, metav1.NewTime(time.Unix(2000, 0)))
	if !apiequality.Semantic.DeepEqual(again, st) {
		t.Fatalf("an unchanged profile planned %+v, then %+v", st, again)
	}

	// A conflict turns Ready False, stamped with the new time.
	t1 := metav1.NewTime(time.Unix(3000, 0))
	conflicts := field.ErrorList{field.Invalid(field.NewPath("spec", "networks").Index(0), "data", `network "data" is offered differently by profile "x"`)}
	st = planStatus(p, nil, conflicts, inUse, t1)
	c = meta.FindStatusCondition(st.Conditions, ConditionReady)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonConflict || !c.LastTransitionTime.Equal(&t1) || c.Message != conflicts[0].Error() {
		t.Fatalf("conflict condition %+v", c)
	}
	// Invalid wins over conflict.
	invalid := field.ErrorList{field.Invalid(field.NewPath("spec", "maxInterfaces"), 99, "outside 1-32")}
	c = meta.FindStatusCondition(planStatus(p, invalid, conflicts, inUse, t1).Conditions, ConditionReady)
	if c.Reason != ReasonInvalid || c.Message != invalid[0].Error() {
		t.Fatalf("invalid condition %+v", c)
	}
}
