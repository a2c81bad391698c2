package agent

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// wroteRecently reports whether the agent wrote this content of this kind
// ("annotation", "condition", "event") on this very pod lately
// (podstate.WriteLog).
func (r *Reconciler) wroteRecently(pod *corev1.Pod, kind, content string) bool {
	rec := r.record(client.ObjectKeyFromObject(pod))
	if rec == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return rec.ref.UID == string(pod.UID) && rec.wrote.Recently(kind, content, time.Now())
}

// noteWrote records a write for wroteRecently.
func (r *Reconciler) noteWrote(pod *corev1.Pod, kind, content string) {
	rec := r.record(client.ObjectKeyFromObject(pod))
	if rec == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec.ref.UID == string(pod.UID) {
		rec.wrote.Note(kind, content, time.Now())
	}
}
