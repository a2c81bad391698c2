package agent

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	crevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"podnet.io/podnet/api/v1alpha1"
)

// podChanged filters the pod updates the agent acts on. The kubelet
// updates a starting pod's status several times (conditions, container
// states) and the agent's own status writes come back as updates too;
// none of these changes what the agent does, and in a burst they would
// fill the queue. A pod is reconciled again when something it reads
// changed: its annotations other than the network-status the agent
// writes, its deletion, its node, its phase or its IPs.
func podChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e crevent.UpdateEvent) bool {
		oldPod, okOld := e.ObjectOld.(*corev1.Pod)
		newPod, okNew := e.ObjectNew.(*corev1.Pod)
		return !okOld || !okNew || podChangeMatters(oldPod, newPod)
	}}
}

// podChangeMatters reports whether the change from old to cur is one the
// agent acts on (see podChanged).
func podChangeMatters(old, cur *corev1.Pod) bool {
	switch {
	case old.UID != cur.UID,
		!old.DeletionTimestamp.Equal(cur.DeletionTimestamp),
		old.Spec.NodeName != cur.Spec.NodeName,
		old.Status.Phase != cur.Status.Phase,
		!slices.Equal(old.Status.PodIPs, cur.Status.PodIPs):
		return true
	}
	return !maps.Equal(withoutStatus(old.Annotations), withoutStatus(cur.Annotations))
}

// withoutStatus is annotations without the network-status the agent
// writes itself (under podnet's key and Multus').
func withoutStatus(annotations map[string]string) map[string]string {
	_, own := annotations[v1alpha1.NetworkStatusAnnotation]
	_, multus := annotations[v1alpha1.MultusNetworkStatusAnnotation]
	if !own && !multus {
		return annotations
	}
	out := maps.Clone(annotations)
	delete(out, v1alpha1.NetworkStatusAnnotation)
	delete(out, v1alpha1.MultusNetworkStatusAnnotation)
	return out
}
