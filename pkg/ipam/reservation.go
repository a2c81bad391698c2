package ipam

import (
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// The rules of addresses reserved for a StatefulSet (ipam.persistent), shared
// by the allocators (which claims a pod may take over) and
// podnet-controller (when a reserved claim is released). They are plain
// functions of the objects involved, so one table test covers each.

// ReservationOf is the StatefulSetReservation a pod's claims carry, or nil when they
// go with the pod: the approval must grant persistence, the pod's
// controller must be an apps/v1 StatefulSet (name and UID) and the pod
// must be named "<statefulset>-<ordinal>", as the StatefulSet controller
// names its pods. The UID is the pod's own word for it: a pod that fakes
// the reference gets a reservation that podnet-controller releases after its
// grace, since no StatefulSet of that UID holds it (StatefulSetKeeps).
func ReservationOf(pod *corev1.Pod, p *v1alpha1.ApprovedPersistence) *v1alpha1.StatefulSetReservation {
	if p == nil || !p.StatefulSets || pod == nil {
		return nil
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.APIVersion != "apps/v1" || ref.Kind != "StatefulSet" || ref.Name == "" || ref.UID == "" {
		return nil
	}
	if _, ok := Ordinal(pod.Name, ref.Name); !ok {
		return nil
	}
	return &v1alpha1.StatefulSetReservation{Name: ref.Name, UID: string(ref.UID), ReleaseAfterSeconds: max(p.ReleaseAfterSeconds, 0)}
}

// Ordinal is the ordinal of pod podName of StatefulSet sts ("<sts>-<n>",
// n decimal without leading zeros), and whether the name is one.
func Ordinal(podName, sts string) (int32, bool) {
	rest, ok := strings.CutPrefix(podName, sts+"-")
	if !ok || rest == "" || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 32)
	if err != nil || n < 0 || strings.ContainsAny(rest, "+-") {
		return 0, false
	}
	return int32(n), true
}

// Reserved is what the reservation rules read of a claim, IPClaim or MACClaim.
type Reserved struct {
	Pod         v1alpha1.PodReference
	Network     string
	Interface   string
	Reservation *v1alpha1.StatefulSetReservation
}

// MayAdopt reports whether the pod interface (owner, network, iface),
// whose own reservation is want (ReservationOf), may take over claim c: c is reserved for a
// StatefulSet, for the pod of the same namespace and name (another pod's
// UID: the pod that had it is gone, since two pods never share a name),
// the same network and interface, and want names the same StatefulSet
// (name and UID). A pod of another namespace, another name, another
// StatefulSet, or without a reservation of its own takes nothing over.
func MayAdopt(c Reserved, owner Owner, want *v1alpha1.StatefulSetReservation, network, iface string) bool {
	if c.Reservation == nil || want == nil {
		return false
	}
	return c.Pod.Namespace == owner.Namespace && c.Pod.Name == owner.Name && c.Pod.UID != owner.UID &&
		c.Network == network && c.Interface == iface &&
		c.Reservation.Name == want.Name && c.Reservation.UID == want.UID
}

// StatefulSetKeeps reports whether sts, the StatefulSet of the claim's
// namespace and reservation's name (nil: none), still holds a claim of pod
// podName: it is the same object (UID), not being deleted, and its
// replicas reach the pod's ordinal (counting from spec.ordinals.start).
// When it does not, the claim is released once ReleaseAfter(res) has
// passed.
func StatefulSetKeeps(res *v1alpha1.StatefulSetReservation, podName string, sts *appsv1.StatefulSet) bool {
	if res == nil || sts == nil || string(sts.UID) != res.UID || sts.Name != res.Name || sts.DeletionTimestamp != nil {
		return false
	}
	n, ok := Ordinal(podName, res.Name)
	if !ok {
		return false
	}
	start, replicas := int32(0), int32(1)
	if sts.Spec.Ordinals != nil {
		start = sts.Spec.Ordinals.Start
	}
	if sts.Spec.Replicas != nil {
		replicas = *sts.Spec.Replicas
	}
	return n >= start && int64(n) < int64(start)+int64(replicas)
}

// ReleaseAfter is how long a reserved claim stays once its StatefulSet no
// longer holds it (0 without a reservation).
func ReleaseAfter(res *v1alpha1.StatefulSetReservation) time.Duration {
	if res == nil {
		return 0
	}
	return time.Duration(res.ReleaseAfterSeconds) * time.Second
}

// reservedOf is what the reservation rules read of an IPClaim.
func reservedOf(c *v1alpha1.IPClaim) Reserved {
	return Reserved{Pod: c.Spec.Pod, Network: c.Spec.Network, Interface: c.Spec.Interface, Reservation: c.Spec.StatefulSet}
}
