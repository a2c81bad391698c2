package ipam

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"podnet.io/podnet/api/v1alpha1"
)

func stsPod(name, owner, kind, apiVersion string, controller bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: name, UID: "pod-2"}}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: owner, UID: "sts-1", Controller: ptr.To(controller)}}
	}
	return p
}

func TestReservationOf(t *testing.T) {
	on := &v1alpha1.ApprovedPersistence{StatefulSets: true, ReleaseAfterSeconds: 600}
	want := &v1alpha1.StatefulSetReservation{Name: "web", UID: "sts-1", ReleaseAfterSeconds: 600}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		persist *v1alpha1.ApprovedPersistence
		want    *v1alpha1.StatefulSetReservation
	}{
		{"pod of a StatefulSet", stsPod("web-0", "web", "StatefulSet", "apps/v1", true), on, want},
		{"ordinal 12", stsPod("web-12", "web", "StatefulSet", "apps/v1", true), on, want},
		{"not persistent", stsPod("web-0", "web", "StatefulSet", "apps/v1", true), nil, nil},
		{"persistence off", stsPod("web-0", "web", "StatefulSet", "apps/v1", true), &v1alpha1.ApprovedPersistence{}, nil},
		{"bare pod", stsPod("web-0", "", "", "", false), on, nil},
		{"owner not the controller", stsPod("web-0", "web", "StatefulSet", "apps/v1", false), on, nil},
		{"controller a ReplicaSet", stsPod("web-0", "web", "ReplicaSet", "apps/v1", true), on, nil},
		{"StatefulSet of another group", stsPod("web-0", "web", "StatefulSet", "apps.kruise.io/v1beta1", true), on, nil},
		{"name not of the StatefulSet", stsPod("db-0", "web", "StatefulSet", "apps/v1", true), on, nil},
		{"name without ordinal", stsPod("web-x", "web", "StatefulSet", "apps/v1", true), on, nil},
		{"ordinal with leading zero", stsPod("web-01", "web", "StatefulSet", "apps/v1", true), on, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ReservationOf(tc.pod, tc.persist)
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("ReservationOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestOrdinal(t *testing.T) {
	for _, tc := range []struct {
		pod, sts string
		n        int32
		ok       bool
	}{
		{"web-0", "web", 0, true},
		{"web-7", "web", 7, true},
		{"my-web-3", "my-web", 3, true},
		{"web-3", "my-web", 0, false},
		{"web-", "web", 0, false},
		{"web--1", "web", 0, false},
		{"web-+1", "web", 0, false},
		{"web-007", "web", 0, false},
		{"web-99999999999", "web", 0, false},
		{"web", "web", 0, false},
	} {
		n, ok := Ordinal(tc.pod, tc.sts)
		if n != tc.n || ok != tc.ok {
			t.Errorf("Ordinal(%q, %q) = %d, %v, want %d, %v", tc.pod, tc.sts, n, ok, tc.n, tc.ok)
		}
	}
}

func TestMayAdopt(t *testing.T) {
	hold := &v1alpha1.StatefulSetReservation{Name: "web", UID: "sts-1", ReleaseAfterSeconds: 60}
	claim := Reserved{Pod: v1alpha1.PodReference{Namespace: "t1", Name: "web-0", UID: "pod-1"}, Network: "data", Interface: "net1", Reservation: hold}
	owner := Owner{Namespace: "t1", Name: "web-0", UID: "pod-2", Node: "n2", Reservation: hold}
	with := func(f func(c *Reserved, o *Owner)) (Reserved, Owner) {
		c, o := claim, owner
		f(&c, &o)
		return c, o
	}
	for _, tc := range []struct {
		name    string
		f       func(c *Reserved, o *Owner)
		network string
		want    bool
	}{
		{"next pod of the same name and StatefulSet", func(*Reserved, *Owner) {}, "data", true},
		{"the same pod", func(_ *Reserved, o *Owner) { o.UID = "pod-1" }, "data", false},
		{"claim not held", func(c *Reserved, _ *Owner) { c.Reservation = nil }, "data", false},
		{"pod without a hold (bare pod)", func(_ *Reserved, o *Owner) { o.Reservation = nil }, "data", false},
		{"pod of another namespace", func(_ *Reserved, o *Owner) { o.Namespace = "t2" }, "data", false},
		{"pod of another name", func(_ *Reserved, o *Owner) { o.Name = "web-1" }, "data", false},
		{"a new StatefulSet of the same name", func(_ *Reserved, o *Owner) {
			o.Reservation = &v1alpha1.StatefulSetReservation{Name: "web", UID: "sts-2"}
		}, "data", false},
		{"another StatefulSet's claim", func(c *Reserved, _ *Owner) {
			c.Reservation = &v1alpha1.StatefulSetReservation{Name: "db", UID: "sts-1"}
		}, "data", false},
		{"another interface", func(c *Reserved, _ *Owner) { c.Interface = "net2" }, "data", false},
		{"another network", func(*Reserved, *Owner) {}, "other", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, o := with(tc.f)
			if got := MayAdopt(c, o, o.Reservation, tc.network, "net1"); got != tc.want {
				t.Fatalf("MayAdopt = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStatefulSetKeeps(t *testing.T) {
	hold := &v1alpha1.StatefulSetReservation{Name: "web", UID: "sts-1", ReleaseAfterSeconds: 60}
	sts := func(replicas int32, f ...func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "web", UID: types.UID("sts-1")},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas)}}
		for _, g := range f {
			g(s)
		}
		return s
	}
	for _, tc := range []struct {
		name string
		pod  string
		hold *v1alpha1.StatefulSetReservation
		sts  *appsv1.StatefulSet
		want bool
	}{
		{"replicas reach the ordinal", "web-2", hold, sts(3), true},
		{"scaled below the ordinal", "web-2", hold, sts(2), false},
		{"scaled to zero", "web-0", hold, sts(0), false},
		{"StatefulSet gone", "web-0", hold, nil, false},
		{"StatefulSet being deleted", "web-0", hold, sts(3, func(s *appsv1.StatefulSet) { s.DeletionTimestamp = &metav1.Time{Time: time.Now()} }), false},
		{"a new StatefulSet of the same name", "web-0", hold, sts(3, func(s *appsv1.StatefulSet) { s.UID = "sts-2" }), false},
		{"faked reference: no StatefulSet of that UID", "web-0", &v1alpha1.StatefulSetReservation{Name: "web", UID: "made-up"}, sts(3), false},
		{"ordinals start at 5, pod 6 of 2", "web-6", hold, sts(2, func(s *appsv1.StatefulSet) { s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5} }), true},
		{"ordinals start at 5, pod 0", "web-0", hold, sts(2, func(s *appsv1.StatefulSet) { s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5} }), false},
		{"replicas unset means 1", "web-0", hold, sts(0, func(s *appsv1.StatefulSet) { s.Spec.Replicas = nil }), true},
		{"pod name not of the StatefulSet", "db-0", hold, sts(3), false},
		{"no hold", "web-0", nil, sts(3), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StatefulSetKeeps(tc.hold, tc.pod, tc.sts); got != tc.want {
				t.Fatalf("StatefulSetKeeps = %v, want %v", got, tc.want)
			}
		})
	}
	if got := ReleaseAfter(hold); got != time.Minute {
		t.Fatalf("ReleaseAfter = %v, want 1m", got)
	}
}
