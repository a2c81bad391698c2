package agent

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// writeMemory is how long the agent trusts its note of what it wrote on a
// pod over a cache that does not show the write yet. A pod event that
// arrives between the agent's patch and the cache catching up (the
// kubelet's own status update, say) would otherwise make the next
// reconcile write the same status and emit the same Event again.
const writeMemory = 10 * time.Second

// wrote is one write the agent made on a pod: what, and when.
type wrote struct {
	content string
	at      time.Time
}

// wroteRecently reports whether the agent wrote this content of this kind
// ("annotation", "condition", "event") on this very pod lately.
func (r *Reconciler) wroteRecently(pod *corev1.Pod, kind, content string) bool {
	rec := r.record(client.ObjectKeyFromObject(pod))
	if rec == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := rec.wrote[kind]
	return ok && rec.ref.UID == string(pod.UID) && w.content == content && time.Since(w.at) < writeMemory
}

// noteWrote records a write for wroteRecently.
func (r *Reconciler) noteWrote(pod *corev1.Pod, kind, content string) {
	rec := r.record(client.ObjectKeyFromObject(pod))
	if rec == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec.ref.UID != string(pod.UID) {
		return
	}
	if rec.wrote == nil {
		rec.wrote = map[string]wrote{}
	}
	rec.wrote[kind] = wrote{content: content, at: time.Now()}
}
