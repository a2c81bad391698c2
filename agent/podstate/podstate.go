package podstate

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"podnet.io/podnet/api/v1alpha1"
)

// Ref names a pod, with its UID so that a new pod of the same name is
// never mistaken for an old one.
type Ref struct {
	Namespace, Name, UID string
}

// Verifier returns the approval on a pod after checking its signature and
// that it was issued for this pod (namespace, service account, request).
type Verifier interface {
	Verify(pod *corev1.Pod) (*v1alpha1.Approval, error)
}

// EventRecorder emits events.k8s.io Events; the manager's recorder is one.
type EventRecorder interface {
	Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any)
}
