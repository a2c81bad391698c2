package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// placeNIC is the NIC that only node 1 has: one end of a veth pair whose
// both ends live in node 1's netns.
const placeNIC = "plc0"

// The carry labels the place network needs (pkg/carry: one per need).
const (
	placeNICLabel    = "carry.podnet.io/nic." + placeNIC
	placeModuleLabel = "carry.podnet.io/mod.macvlan"
)

const placeProfile = `
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: e2e-place}
spec:
  namespaceSelector:
    matchLabels: {tenant: a}
  networks:
  - name: place
    macvlan: {master: ` + placeNIC + `, mode: bridge}
    ipam:
      pools: ["192.168.57.0/24"]
`

// placeDeployment asks for the place network and says nothing of nodes.
func placeDeployment(replicas int) string {
	return fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: place, namespace: %[1]s}
spec:
  replicas: %[2]d
  selector: {matchLabels: {app: place}}
  template:
    metadata:
      labels: {app: place}
      annotations: {%[3]s: place}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: localhost/podnet/busybox:dev
        imagePullPolicy: Never
        command: ["sleep", "86400"]
`, tenantNS, replicas, podnetv1.NetworksAnnotation)
}

// pinnedPod asks for the place network on a node it names itself
// (spec.nodeName: the scheduler never sees it).
func pinnedPod(node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "place-pinned", Annotations: map[string]string{podnetv1.NetworksAnnotation: "place"}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: "app", Image: "localhost/podnet/busybox:dev", ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "86400"}}},
		},
	}
}

// testPlacement: a macvlan network whose parent NIC only node 1 has. The
// agents label their nodes with what they carry; the webhook requires it
// of the network's pods, so every replica of a Deployment that names no
// node lands on node 1 and gets its interface; a pod pinned to node 2 by
// name gets no network, the condition NodeCannotCarry and one Event. When
// node 1 loses the NIC, its label goes and its pods say so too.
func (s *suite) testPlacement(t *testing.T) {
	n1 := s.cluster.Nodes[0]
	ns1 := filepath.Base(n1.NetNS)
	runIP(t, "-n", ns1, "link", "add", placeNIC, "type", "veth", "peer", "name", placeNIC+"p")
	t.Cleanup(func() { _ = exec.Command("ip", "-n", ns1, "link", "del", placeNIC).Run() })
	runIP(t, "-n", ns1, "link", "set", placeNIC, "up")
	runIP(t, "-n", ns1, "link", "set", placeNIC+"p", "up")
	s.apply(t, placeProfile)
	t.Cleanup(func() {
		s.kubectl(t, "", "-n", tenantNS, "delete", "deployment", "place", "--ignore-not-found", "--wait=false")
		s.kubectl(t, "", "-n", tenantNS, "delete", "pod", "place-pinned", "--ignore-not-found", "--wait=false")
		s.kubectl(t, "", "delete", "networkprofile", "e2e-place", "--ignore-not-found", "--wait=false")
	})
	s.waitNodeLabels(t, node1, map[string]bool{placeNICLabel: true, placeModuleLabel: true})
	s.waitNodeLabels(t, node2, map[string]bool{placeNICLabel: false, placeModuleLabel: true})

	s.apply(t, placeDeployment(3))
	pods := s.waitPodsWith(t, "place", 3, "net1")
	for _, p := range pods {
		if p.Spec.NodeName != node1 {
			t.Errorf("pod %s on %s, want %s: the only node with %s", p.Name, p.Spec.NodeName, node1, placeNIC)
		}
		if !requires(p, placeNICLabel) {
			t.Errorf("pod %s: affinity %+v does not require %s", p.Name, p.Spec.Affinity, placeNICLabel)
		}
	}

	pinned := pinnedPod(node2)
	if err := s.client.Create(context.Background(), pinned); err != nil {
		t.Fatal(err)
	}
	s.waitCondition(t, tenantNS, pinned.Name, podnetv1.ReasonNodeCannotCarry)
	s.waitEventNaming(t, tenantNS, pinned.Name, podnetv1.ReasonNodeCannotCarry, placeNIC)
	if c := networksReady(s.getPod(t, tenantNS, pinned.Name)); !strings.Contains(c.Message, `"place"`) || !strings.Contains(c.Message, placeNIC) {
		t.Errorf("condition message %q names neither the network nor the NIC", c.Message)
	}
	if st := s.getPod(t, tenantNS, pinned.Name).Annotations[podnetv1.NetworkStatusAnnotation]; strings.Contains(st, "net1") {
		t.Errorf("pinned pod has net1 in its network-status: %s", st)
	}

	// Node 1 loses the NIC: its agent sees the link go, drops the label
	// and tells its pods why they lost the network.
	runIP(t, "-n", ns1, "link", "del", placeNIC)
	s.waitNodeLabels(t, node1, map[string]bool{placeNICLabel: false, placeModuleLabel: true})
	for _, p := range pods {
		s.waitCondition(t, tenantNS, p.Name, podnetv1.ReasonNodeCannotCarry)
	}
	// Whatever looked again at the pinned pod meanwhile, it was told once.
	if n := s.countEvents(t, tenantNS, pinned.Name, podnetv1.ReasonNodeCannotCarry); n != 1 {
		t.Errorf("%d NodeCannotCarry Events on the pinned pod, want 1", n)
	}
}

// waitNodeLabels waits until the node has (true) or lacks (false) each
// label.
func (s *suite) waitNodeLabels(t *testing.T, node string, want map[string]bool) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("node %s carry labels %v", node, want), func(ctx context.Context) error {
		var n corev1.Node
		if err := s.client.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
			return err
		}
		for k, has := range want {
			if _, ok := n.Labels[k]; ok != has {
				return fmt.Errorf("labels %v", n.Labels)
			}
		}
		return nil
	})
}

// countEvents counts a pod's Events of one reason (each repeat of one
// Event counts).
func (s *suite) countEvents(t *testing.T, ns, pod, reason string) int {
	t.Helper()
	var evs corev1.EventList
	if err := s.client.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == pod && e.Reason == reason {
			n += max(int(e.Count), 1)
		}
	}
	return n
}

// requires says whether every term of the pod's required node affinity
// asks for the label to exist.
func requires(p corev1.Pod, label string) bool {
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for _, tm := range terms {
		found := false
		for _, r := range tm.MatchExpressions {
			found = found || (r.Key == label && r.Operator == corev1.NodeSelectorOpExists)
		}
		if !found {
			return false
		}
	}
	return len(terms) > 0
}

func runIP(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}
