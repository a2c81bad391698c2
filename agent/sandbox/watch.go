package sandbox

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	crevent "sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/pkg/cri"
)

// DefaultPoll is how often the node's sandboxes are listed while a
// pod waits for its own. A new sandbox is seen half of it later on
// average: 25 ms against the ~1 ms of a list of a few hundred sandboxes.
const DefaultPoll = 50 * time.Millisecond

// Watch wakes the reconcile of a pod whose sandbox appeared. Pods
// that found no sandbox wait here instead of polling the runtime each on
// its own: one cri.Poller serves them all, so a burst of pods neither
// multiplies the runtime's work nor fills the workers with retries.
type Watch struct {
	poller *cri.Poller
	events chan crevent.GenericEvent

	mu   sync.Mutex
	keys map[string]types.NamespacedName
}

// NewWatch polls rt every interval while pods wait.
func NewWatch(rt cri.Runtime, interval time.Duration) *Watch {
	w := &Watch{events: make(chan crevent.GenericEvent, 1024), keys: map[string]types.NamespacedName{}}
	w.poller = &cri.Poller{Runtime: rt, Interval: interval, Appeared: w.appeared}
	return w
}

// Wait makes the pod's reconcile run again once its sandbox is READY.
func (w *Watch) Wait(key types.NamespacedName, uid string) {
	w.mu.Lock()
	w.keys[uid] = key
	w.mu.Unlock()
	w.poller.Wait(uid)
}

// Forget stops waiting for the pod's sandbox.
func (w *Watch) Forget(uid string) {
	w.poller.Forget(uid)
	w.mu.Lock()
	delete(w.keys, uid)
	w.mu.Unlock()
}

// Waiting is the number of pods waiting for a sandbox.
func (w *Watch) Waiting() int { return w.poller.Waiting() }

// Polls is the number of node-wide sandbox lists made so far.
func (w *Watch) Polls() int64 { return w.poller.Polls() }

// Start implements manager.Runnable.
func (w *Watch) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("sandboxes")
	w.poller.Failed = func(err error) { log.Error(err, "poll") }
	return w.poller.Start(ctx)
}

func (w *Watch) appeared(uid string) {
	w.mu.Lock()
	key, ok := w.keys[uid]
	delete(w.keys, uid)
	w.mu.Unlock()
	if ok {
		w.events <- crevent.GenericEvent{Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
	}
}

// Source feeds the controller the pods whose sandbox appeared.
func (w *Watch) Source() source.Source {
	return source.Channel(w.events, podstate.Urgent())
}
