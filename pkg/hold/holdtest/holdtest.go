// Package holdtest makes the pods the tests of a hold mode judge: podnet
// pods as the webhook admitted them, held one way or another.
package holdtest

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// NRIAnnotated is the annotation the webhook stamps on a pod held by NRI.
var NRIAnnotated = map[string]string{v1alpha1.NRIRequiredPluginsAnnotation: v1alpha1.NRIRequiredPluginsValue}

// Pod is a podnet pod t1/p as the webhook admitted it: with the wait
// container, with the annotations given (NRIAnnotated), or neither.
func Pod(wait bool, annotations map[string]string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "t1", Annotations: map[string]string{v1alpha1.NetworksAnnotation: "data"}}}
	for k, v := range annotations {
		p.Annotations[k] = v
	}
	if wait {
		p.Spec.InitContainers = []corev1.Container{{Name: v1alpha1.WaitContainerName}}
	}
	return p
}
