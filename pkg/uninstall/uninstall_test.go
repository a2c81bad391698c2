package uninstall

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"podnet.io/podnet/api/v1alpha1"
)

var agentKey = types.NamespacedName{Namespace: "podnet-system", Name: "podnet-agent"}

func daemonSet() *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: agentKey.Namespace, Name: agentKey.Name, UID: "ds-uid"}}
}

func agentPod(name, node string, owner types.UID) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: agentKey.Namespace, Name: name, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "DaemonSet", Name: agentKey.Name, UID: owner, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: node},
	}
}

func nodeWith(name string, annotations map[string]string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
}

func TestPending(t *testing.T) {
	ds := daemonSet()
	done := map[string]string{v1alpha1.AgentUninstalledAnnotation: "ds-uid"}
	for _, tc := range []struct {
		name  string
		pods  []corev1.Pod
		nodes []corev1.Node
		want  []string
	}{
		{"every node reported", []corev1.Pod{agentPod("a", "n1", "ds-uid"), agentPod("b", "n2", "ds-uid")},
			[]corev1.Node{nodeWith("n1", done), nodeWith("n2", done)}, nil},
		{"one did not", []corev1.Pod{agentPod("a", "n1", "ds-uid"), agentPod("b", "n2", "ds-uid")},
			[]corev1.Node{nodeWith("n1", done), nodeWith("n2", nil)}, []string{"n2"}},
		{"a report for another DaemonSet does not count", []corev1.Pod{agentPod("a", "n1", "ds-uid")},
			[]corev1.Node{nodeWith("n1", map[string]string{v1alpha1.AgentUninstalledAnnotation: "old-uid"})}, []string{"n1"}},
		{"nodes without an agent pod are not waited for", []corev1.Pod{agentPod("a", "n1", "ds-uid")},
			[]corev1.Node{nodeWith("n1", done), nodeWith("n3", nil)}, nil},
		{"pods of other owners and unscheduled pods are not agents", []corev1.Pod{agentPod("x", "n2", "other"), agentPod("y", "", "ds-uid")},
			[]corev1.Node{nodeWith("n2", nil)}, nil},
		{"two pods on one node (a rollout) name it once, sorted", []corev1.Pod{agentPod("a", "n2", "ds-uid"), agentPod("b", "n1", "ds-uid"), agentPod("c", "n2", "ds-uid")},
			nil, []string{"n1", "n2"}},
	} {
		if got := Pending(ds, tc.pods, tc.nodes); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Pending = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// cluster is a fake API with the agent's DaemonSet, one agent pod on each
// of n1 and n2, and a stale report and VNIs on the nodes; agents lists
// the nodes whose agent reports once the mark is set.
func cluster(t *testing.T, agents ...string) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	p1, p2 := agentPod("agent-1", "n1", "ds-uid"), agentPod("agent-2", "n2", "ds-uid")
	stale := map[string]string{v1alpha1.AgentUninstalledAnnotation: "ds-uid", v1alpha1.NodeVNIsAnnotation: "7", "other": "kept"}
	n1, n2 := nodeWith("n1", stale), nodeWith("n2", map[string]string{"other": "kept"})
	var mu sync.Mutex
	marked := false
	var c client.Client
	c = fake.NewClientBuilder().WithScheme(scheme).WithObjects(daemonSet(), &p1, &p2, &n1, &n2).
		WithInterceptorFuncs(interceptor.Funcs{
			// The agents: they report once they see the mark, and not
			// before (a stale report must not count).
			Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if err := cl.Patch(ctx, obj, patch, opts...); err != nil {
					return err
				}
				if _, ok := obj.(*appsv1.DaemonSet); ok && strings.Contains(string(must(patch.Data(obj))), v1alpha1.UninstallAnnotation) {
					mu.Lock()
					marked = true
					mu.Unlock()
				}
				return nil
			},
			List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				mu.Lock()
				report := marked
				mu.Unlock()
				if _, nodes := list.(*corev1.NodeList); nodes && report {
					for _, n := range agents {
						p := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+v1alpha1.AgentUninstalledAnnotation+`":"ds-uid"}}}`))
						if err := cl.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, p); err != nil {
							return err
						}
					}
				}
				return cl.List(ctx, list, opts...)
			},
		}).Build()
	return c
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func annotations(t *testing.T, c client.Client, name string) map[string]string {
	t.Helper()
	var n corev1.Node
	if err := c.Get(context.Background(), types.NamespacedName{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	return n.Annotations
}

// TestRunWaitsForEveryAgentThenClearsTheNodes: the mark is set, a stale
// report is not taken for a new one, and once both agents reported the
// nodes keep none of podnet's annotations (and all of the others).
func TestRunWaitsForEveryAgentThenClearsTheNodes(t *testing.T) {
	c := cluster(t, "n1", "n2")
	var log strings.Builder
	err := Run(context.Background(), c, Options{DaemonSet: agentKey, Poll: time.Millisecond, Timeout: 10 * time.Second, Log: &log,
		Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	var ds appsv1.DaemonSet
	if err := c.Get(context.Background(), agentKey, &ds); err != nil {
		t.Fatal(err)
	}
	if got := ds.Annotations[v1alpha1.UninstallAnnotation]; got != "2026-01-02T03:04:05Z" {
		t.Errorf("mark %q, want the run's time", got)
	}
	for _, n := range []string{"n1", "n2"} {
		if a := annotations(t, c, n); len(a) != 1 || a["other"] != "kept" {
			t.Errorf("node %s annotations %v, want only the foreign one", n, a)
		}
	}
}

// TestRunTimeoutNamesTheNodes: an agent that never reports makes Run
// fail naming its node, and the mark stays.
func TestRunTimeoutNamesTheNodes(t *testing.T) {
	c := cluster(t, "n1")
	err := Run(context.Background(), c, Options{DaemonSet: agentKey, Poll: time.Millisecond, Timeout: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "did not report: n2") || strings.Contains(err.Error(), "n1,") {
		t.Fatalf("error %v, want one naming n2 only", err)
	}
	var ds appsv1.DaemonSet
	if err := c.Get(context.Background(), agentKey, &ds); err != nil {
		t.Fatal(err)
	}
	if _, ok := ds.Annotations[v1alpha1.UninstallAnnotation]; !ok {
		t.Error("the mark was removed after a timeout")
	}
	if a := annotations(t, c, "n1"); a[v1alpha1.AgentUninstalledAnnotation] != "ds-uid" {
		t.Errorf("node n1 lost its report after a timeout: %v", a)
	}
}

// TestRunWithoutAgentClearsTheNodes: with no DaemonSet (podnet's objects
// already deleted) only the Nodes' annotations are left to remove.
func TestRunWithoutAgentClearsTheNodes(t *testing.T) {
	c := cluster(t)
	if err := c.Delete(context.Background(), daemonSet()); err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), c, Options{DaemonSet: agentKey, Timeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	if a := annotations(t, c, "n1"); len(a) != 1 {
		t.Errorf("node n1 annotations %v, want only the foreign one", a)
	}
}

// TestRunDoesNotTakeAStaleReport: a report left from a run that was taken
// back is cleared before the mark is set, so its node is waited for.
func TestRunDoesNotTakeAStaleReport(t *testing.T) {
	c := cluster(t)
	err := Run(context.Background(), c, Options{DaemonSet: agentKey, Poll: time.Millisecond, Timeout: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "did not report: n1 (pod agent-1: no status yet); n2 (pod agent-2: no status yet)") {
		t.Fatalf("error %v, want one naming n1 (whose report is stale) and n2", err)
	}
}

// TestStuck: the message of a timed-out uninstall names, per node, the
// agent pod there and why it does not run, so that an agent stuck since
// its install (a mount its node cannot give it) is found at once.
func TestStuck(t *testing.T) {
	ds := daemonSet()
	stuck := agentPod("a", "n1", "ds-uid")
	stuck.Status.Phase = corev1.PodPending
	stuck.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "agent", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: "CreateContainerError", Message: `path "/run/containerd" is mounted on "/" but it is not a shared or slave mount`}}}}
	running := agentPod("b", "n2", "ds-uid")
	running.Status.Phase = corev1.PodRunning
	got := Stuck(ds, []corev1.Pod{stuck, running, agentPod("x", "n3", "other")}, []string{"n1", "n2", "n3"})
	want := []string{
		`n1 (pod a: container agent waiting, CreateContainerError: path "/run/containerd" is mounted on "/" but it is not a shared or slave mount)`,
		"n2 (pod b: Running)",
		"n3",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Stuck =\n%q\nwant\n%q", got, want)
	}
}
