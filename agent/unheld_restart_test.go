package agent

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/agent/nodehold"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/cristop"
	"podnet.io/podnet/pkg/policy"
)

// fakeContainers is a sandbox's running containers; Stop records.
type fakeContainers struct {
	mu      sync.Mutex
	running map[string][]cristop.Container // sandbox → containers
	lists   int
	stops   []string // "id grace"
	stopErr error
}

func (f *fakeContainers) Running(_ context.Context, sandbox, _ string) ([]cristop.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	return append([]cristop.Container(nil), f.running[sandbox]...), nil
}

func (f *fakeContainers) Stop(_ context.Context, id string, grace time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopErr != nil {
		return f.stopErr
	}
	f.stops = append(f.stops, id+" "+grace.String())
	return nil
}

// restartedTotal reads podnet_agent_containers_restarted_total from the
// registry the restarts were made with.
func restartedTotal(t *testing.T, reg prometheus.Gatherer) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "podnet_agent_containers_restarted_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("podnet_agent_containers_restarted_total is not registered")
	return 0
}

func unheldHarness(t *testing.T, pod *corev1.Pod) (*harness, *fakeContainers, *prometheus.Registry) {
	t.Helper()
	h := newHarness(t, pod)
	h.sb.netns[string(pod.UID)] = "/var/run/netns/cni-" + pod.Name
	fc := &fakeContainers{running: map[string][]cristop.Container{}}
	reg := prometheus.NewRegistry()
	u, err := nodehold.NewUnheldRestarts(reg, fc)
	if err != nil {
		t.Fatal(err)
	}
	h.r.Unheld = u
	return h, fc, reg
}

func heldPod(name string) *corev1.Pod {
	p := newPod(name, "one", "good")
	p.Annotations[v1alpha1.NRIRequiredPluginsAnnotation] = v1alpha1.NRIRequiredPluginsValue
	p.Spec.Containers = []corev1.Container{{Name: "app", SecurityContext: &corev1.SecurityContext{
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}}}}}
	return p
}

// TestReconcileStopsUnheldContainerOnce: the first attach of an NRI-held
// pod stops the container that started before it, once, with an Event
// and the counter; later reconciles (the status True, or a stale read
// without it) stop nothing more, not even the restarted container.
func TestReconcileStopsUnheldContainerOnce(t *testing.T) {
	h, fc, reg := unheldHarness(t, heldPod("p"))
	fc.running["sb-uid-p"] = []cristop.Container{{ID: "c1", Name: "app", StartedAt: time.Now().Add(-time.Minute)}}
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if len(fc.stops) != 1 || fc.stops[0] != "c1 2s" {
		t.Fatalf("stops %v, want c1 with 2s grace", fc.stops)
	}
	if !h.events.has(corev1.EventTypeWarning, v1alpha1.ReasonRestartedWithoutNetworks) {
		t.Errorf("events %+v, want %s", h.events.events, v1alpha1.ReasonRestartedWithoutNetworks)
	}
	if got := restartedTotal(t, reg); got != 1 {
		t.Errorf("podnet_agent_containers_restarted_total = %v, want 1", got)
	}
	// The kubelet started it again; a reconcile reading the pod as it was
	// before the status write must not stop the new one.
	fc.running["sb-uid-p"] = []cristop.Container{{ID: "c2", Name: "app", StartedAt: time.Now()}}
	stale := h.get(t, "p")
	stale.Status.Conditions = nil
	delete(stale.Annotations, v1alpha1.NetworkStatusAnnotation)
	if err := h.c.Update(context.Background(), stale); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := h.reconcile(t, "p"); err != nil {
			t.Fatal(err)
		}
	}
	if len(fc.stops) != 1 || fc.lists != 1 {
		t.Errorf("stops %v after %d lists, want c1 only, listed once", fc.stops, fc.lists)
	}
}

// TestReconcileStopsContainerStartedMidAttach: a container that started
// while the first attach was building the pod's interfaces (one built,
// the other not yet) ran without its networks too, and is stopped.
func TestReconcileStopsContainerStartedMidAttach(t *testing.T) {
	h, fc, _ := unheldHarness(t, heldPod("p"))
	h.dp.onApply = func() {
		time.Sleep(time.Millisecond)
		fc.mu.Lock()
		fc.running["sb-uid-p"] = []cristop.Container{{ID: "c1", Name: "app", StartedAt: time.Now()}}
		fc.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if len(fc.stops) != 1 || fc.stops[0] != "c1 2s" {
		t.Fatalf("stops %v, want c1 with 2s grace", fc.stops)
	}
}

// TestReconcileRetriesAFailedStop: a stop the runtime refused is tried
// again at the next reconcile, without deciding anew.
func TestReconcileRetriesAFailedStop(t *testing.T) {
	h, fc, _ := unheldHarness(t, heldPod("p"))
	fc.running["sb-uid-p"] = []cristop.Container{{ID: "c1", Name: "app", StartedAt: time.Now().Add(-time.Minute)}}
	fc.stopErr = errors.New("runtime busy")
	if _, err := h.reconcile(t, "p"); err == nil {
		t.Fatal("reconcile with a failed stop succeeded; it must be retried")
	}
	fc.stopErr = nil
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if len(fc.stops) != 1 || fc.lists != 1 {
		t.Errorf("stops %v after %d lists, want c1 once, listed once", fc.stops, fc.lists)
	}
}

// TestReconcileLeavesOtherPodsContainersAlone: a pod not held by NRI,
// and a held pod the agent attached before (its condition True), are
// never asked about.
func TestReconcileLeavesOtherPodsContainersAlone(t *testing.T) {
	plain := newPod("plain", "one", "good")
	h, fc, _ := unheldHarness(t, plain)
	fc.running["sb-uid-plain"] = []cristop.Container{{ID: "c1", Name: "app", StartedAt: time.Now().Add(-time.Minute)}}
	if _, err := h.reconcile(t, "plain"); err != nil {
		t.Fatal(err)
	}
	attachedPod := heldPod("attached")
	attachedPod.Status.Conditions = []corev1.PodCondition{{Type: v1alpha1.NetworksReadyCondition, Status: corev1.ConditionTrue,
		Reason: v1alpha1.ReasonAttached, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}
	h2, fc2, _ := unheldHarness(t, attachedPod)
	fc2.running["sb-uid-attached"] = []cristop.Container{{ID: "c2", Name: "app", StartedAt: time.Now().Add(-time.Minute)}}
	if _, err := h2.reconcile(t, "attached"); err != nil {
		t.Fatal(err)
	}
	if fc.lists+fc2.lists != 0 || len(fc.stops)+len(fc2.stops) != 0 {
		t.Errorf("lists %d/%d, stops %v/%v: want none", fc.lists, fc2.lists, fc.stops, fc2.stops)
	}
}

// TestReconcileUnheldAfterAGrantArrives: a pod refused at first (nothing
// granted, so its attaches build nothing) whose container slipped through
// is restarted once the grant comes and the first link is made; the
// attaches that built nothing do not count as the time of the links.
func TestReconcileUnheldAfterAGrantArrives(t *testing.T) {
	h, fc, _ := unheldHarness(t, heldPod("p"))
	h.grants.revoked = []policy.Revocation{{Interface: "net1", Network: "data", Reason: "namespace not opted in"}}
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	c := condition(t, h.get(t, "p"))
	if c.Reason != v1alpha1.ReasonGrantRevoked {
		t.Fatalf("condition %s, want %s", c.Reason, v1alpha1.ReasonGrantRevoked)
	}
	// Started once the pod was refused, after that attach.
	fc.running["sb-uid-p"] = []cristop.Container{{ID: "c1", Name: "app", StartedAt: time.Now()}}
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	h.grants.revoked = nil
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	if len(fc.stops) != 1 || fc.stops[0] != "c1 2s" {
		t.Errorf("stops %v, want c1", fc.stops)
	}
}
