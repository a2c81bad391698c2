package podstate

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	crevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestUrgentGoesAheadOfQueuedWork: a pod whose sandbox waits is taken
// before pods queued earlier at the usual priority.
func TestUrgentGoesAheadOfQueuedWork(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	for _, name := range []string{"a", "b", "c"} {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}})
	}
	Urgent().Generic(context.Background(), crevent.GenericEvent{Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "waiting"}}}, q)
	got, _ := q.Get()
	if got.Name != "waiting" {
		t.Fatalf("first pod taken is %q, want the urgent one", got.Name)
	}
}
