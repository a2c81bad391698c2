package podstate

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	crevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Priorities in the agent's work queue (controller-runtime's priority
// queue). In a burst every pod is queued several times (its creation,
// the kubelet's status updates, the agent's own writes); the pods whose
// start waits on the agent must not queue behind that.
const (
	// PriorityUrgent is a pod whose sandbox waits for the agent: the CNI
	// plugin holding its setup, or a sandbox just found for a pod whose
	// wait container is polling.
	PriorityUrgent = 100
	// PriorityResync is the periodic check of a configured pod (drift
	// repair): it goes behind everything else.
	PriorityResync = handler.LowPriority
)

// Urgent enqueues the pod of each event at PriorityUrgent.
func Urgent() handler.EventHandler {
	return handler.Funcs{GenericFunc: func(_ context.Context, e crevent.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)}
		if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
			pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(PriorityUrgent)}, req)
			return
		}
		q.Add(req)
	}}
}
