package agent

import (
	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam"
)

// A network with ipam.persistent keeps a StatefulSet pod's addresses and
// MAC for the next pod of its name: the claims carry a StatefulSetReservation,
// the agent's whole-pod release leaves them, and the next pod's agent
// takes them over on its first attach (Adopt, before Ensure) by writing
// its pod UID and node into them; podnet-controller releases them once
// the StatefulSet no longer holds them.
//
// +kubebuilder:rbac:groups=podnet.io,resources=ipclaims;macclaims,verbs=update

// ownerOf is the holder of an approved interface's claims: the pod, with
// the reservation its claims carry when the approval keeps them for the pod's
// StatefulSet (ipam.ReservationOf, the same rule for addresses and MACs).
func ownerOf(pod *corev1.Pod, ai v1alpha1.ApprovedInterface) ipam.Owner {
	var persist *v1alpha1.ApprovedPersistence
	if ai.IPAM != nil {
		persist = ai.IPAM.Persistent
	}
	return ipam.Owner{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), Node: pod.Spec.NodeName,
		Reservation: ipam.ReservationOf(pod, persist)}
}
