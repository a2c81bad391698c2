package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam"
)

// controlPlaneLabel marks the node trusted with the webhook's signing key
// and the controller (hack/localcluster labels the first node so).
const controlPlaneLabel = "node-role.kubernetes.io/control-plane"

// testNodeCompromise plays root on a worker node and on wherever the
// controller runs: it takes the real service-account tokens podnet's pods
// hold (bound to those pods, as the kubelet projects them) and tries what
// they must not do.
func (s *suite) testNodeCompromise(t *testing.T) {
	t.Run("AgentDrainsAnotherNodesQuota", s.testAgentForgesClaims)
	t.Run("ControllerTokenRewritesLeases", s.testControllerToken)
	t.Run("KeyAndControllerOnControlPlane", s.testKeyAndControllerPlacement)
}

// testAgentForgesClaims: node2's agent token creates, under its own
// node's label (which admission allows), an address claim and a quota slot
// of the victim's namespace naming the victim, a live pod of node1, and a
// slot of the victim's namespace's quota naming a pod of its own node in
// another namespace. podnet-controller deletes all three as forged, with
// an Event; claims labelled with node1 are refused at admission.
func (s *suite) testAgentForgesClaims(t *testing.T) {
	ctx := context.Background()
	victim := s.getPod(t, attackNS, "victim")
	if victim.Spec.NodeName != node1 {
		t.Fatalf("victim runs on %q, want %q", victim.Spec.NodeName, node1)
	}
	agent := s.tokenClient(t, "podnet-agent", s.podnetPodOn(t, "podnet-agent", node2))
	ref := podnetv1.PodReference{Namespace: victim.Namespace, Name: victim.Name, UID: string(victim.UID)}
	pool := netip.MustParsePrefix("192.168.60.0/24")
	// Addresses and quota slots are picked by a hash of each pod's UID: the
	// forged ones take numbers no pod of this run holds.
	free := s.freeClaimNumbers(t, 3, func(k int) string { return ipam.SlotName(atkSpace, pool, attackNS, k) }, func(k int) string {
		return ipam.ClaimName(atkSpace, netip.AddrFrom4([4]byte{192, 168, 60, byte(k)}))
	})
	addr := forgedClaim(ref, node2)
	addr.Name, addr.Spec.Address = ipam.ClaimName(atkSpace, netip.AddrFrom4([4]byte{192, 168, 60, byte(free[0])})), netip.AddrFrom4([4]byte{192, 168, 60, byte(free[0])}).String()
	slot := forgedClaim(ref, node2)
	slot.Name, slot.Spec.Pool, slot.Spec.Slot = ipam.SlotName(atkSpace, pool, attackNS, free[1]), pool.String(), new(int32(free[1]))

	// A pod of node2 in another namespace, counted against the victim's
	// namespace's quota.
	own := s.podnetPodOn(t, "podnet-agent", node2)
	ownRef := podnetv1.PodReference{Namespace: own.Namespace, Name: own.Name, UID: string(own.UID)}
	squat := forgedClaim(ownRef, node2)
	squat.Name, squat.Spec.Pool, squat.Spec.Slot = ipam.SlotName(atkSpace, pool, attackNS, free[2]), pool.String(), new(int32(free[2]))

	onNode1 := forgedClaim(ref, node1)
	onNode1.Name, onNode1.Spec.Address = ipam.ClaimName(atkSpace, netip.MustParseAddr("192.168.60.251")), "192.168.60.251"
	wantPolicyRefusal(t, agent.Create(ctx, onNode1), "podnet.io/node="+node2)

	forged := []*podnetv1.IPClaim{addr, slot, squat}
	for _, c := range forged {
		if err := agent.Create(ctx, c); err != nil {
			t.Fatalf("node2's agent creating claim %s under its own node's label: %v", c.Name, err)
		}
	}
	start := time.Now()
	eventually(t, 2*time.Minute, "forged claims deleted by podnet-controller", func(ctx context.Context) error {
		for _, c := range forged {
			err := s.client.Get(ctx, client.ObjectKeyFromObject(c), &podnetv1.IPClaim{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("claim %s still there (err=%v)", c.Name, err)
			}
		}
		return nil
	})
	t.Logf("forged claims deleted %v after their creation", time.Since(start).Round(time.Second))
	eventually(t, time.Minute, "a ForgedClaimDeleted Event per claim", func(ctx context.Context) error {
		var evs eventsv1.EventList
		if err := s.client.List(ctx, &evs); err != nil {
			return err
		}
		for _, c := range forged {
			found := false
			for _, e := range evs.Items {
				if e.Reason == "ForgedClaimDeleted" && e.Regarding.Name == c.Name {
					t.Logf("event on %s: %s", c.Name, e.Note)
					found = true
				}
			}
			if !found {
				return fmt.Errorf("no ForgedClaimDeleted event on claim %s", c.Name)
			}
		}
		return nil
	})
	// The victim keeps its network and its own claims.
	s.waitNet1(t, attackNS, "victim", true, time.Minute)
}

// forgedClaim is an IPClaim of network data labelled for node, naming pod.
func forgedClaim(pod podnetv1.PodReference, node string) *podnetv1.IPClaim {
	return &podnetv1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{podnetv1.NodeLabel: node, podnetv1.NetworkLabel: "data",
			podnetv1.PodUIDLabel: pod.UID, podnetv1.NamespaceLabel: pod.Namespace, podnetv1.AddressSpaceLabel: atkSpace}},
		Spec: podnetv1.IPClaimSpec{Network: "data", AddressSpace: atkSpace, Interface: "net1", Pod: pod},
	}
}

// atkSpace is the address space of profile atk's network data: its bridge.
const atkSpace = "pnbr-atk.bridge"

// freeClaimNumbers returns n numbers k in 40..249 for which no claim named
// by any of names(k) exists, so that a forged claim never collides with
// one a pod holds.
func (s *suite) freeClaimNumbers(t *testing.T, n int, names ...func(k int) string) []int {
	t.Helper()
	var out []int
	for k := 40; k < 250 && len(out) < n; k++ {
		free := true
		for _, name := range names {
			err := s.client.Get(context.Background(), client.ObjectKey{Name: name(k)}, &podnetv1.IPClaim{})
			if !apierrors.IsNotFound(err) {
				free = false
			}
		}
		if free {
			out = append(out, k)
		}
	}
	if len(out) < n {
		t.Fatalf("fewer than %d free claim numbers in %s: %v", n, atkSpace, out)
	}
	return out
}

// testControllerToken: the controller's real token renews only its own
// Lease: node heartbeats, other components' elections and new Leases are
// forbidden to it.
func (s *suite) testControllerToken(t *testing.T) {
	ctx := context.Background()
	ctrl := s.tokenClient(t, "podnet-controller", s.podnetPodOn(t, "podnet-controller", ""))
	var own coordinationv1.Lease
	if err := ctrl.Get(ctx, client.ObjectKey{Namespace: "podnet-system", Name: "podnet-controller"}, &own); err != nil {
		t.Fatalf("the controller reading its own Lease: %v", err)
	}
	var heartbeat coordinationv1.Lease
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: "kube-node-lease", Name: node2}, &heartbeat); err != nil {
		t.Fatal(err)
	}
	heartbeat.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(time.Hour)}
	wantForbidden(t, ctrl.Update(ctx, &heartbeat), "update node2's heartbeat Lease")
	wantForbidden(t, ctrl.Patch(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-scheduler"}},
		rawPatch(`{"spec":{"holderIdentity":"attacker"}}`)), "patch kube-system/kube-scheduler")
	wantForbidden(t, ctrl.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "attacker"}}),
		"create a Lease in kube-system")
	wantForbidden(t, ctrl.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "podnet-system", Name: "attacker"}}),
		"create a Lease in podnet-system")
	wantForbidden(t, ctrl.Delete(ctx, &heartbeat), "delete node2's heartbeat Lease")
}

// testKeyAndControllerPlacement: the webhook (the signing key) and the
// controller (its token) run only on the node labelled control-plane, so
// root on the worker node2 holds neither.
func (s *suite) testKeyAndControllerPlacement(t *testing.T) {
	ctx := context.Background()
	var n corev1.Node
	if err := s.client.Get(ctx, client.ObjectKey{Name: node1}, &n); err != nil {
		t.Fatal(err)
	}
	if _, ok := n.Labels[controlPlaneLabel]; !ok {
		t.Fatalf("node %s has no %s label", node1, controlPlaneLabel)
	}
	for _, app := range []string{"podnet-webhook", "podnet-controller"} {
		var pods corev1.PodList
		if err := s.client.List(ctx, &pods, client.InNamespace("podnet-system"), client.MatchingLabels{"app.kubernetes.io/name": app}); err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 0 {
			t.Fatalf("no %s pods", app)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != node1 {
				t.Errorf("%s pod %s runs on %q, want only the control-plane node %s", app, p.Name, p.Spec.NodeName, node1)
			}
		}
	}
}

// podnetPodOn is a running pod of podnet's app on node ("" for any node).
func (s *suite) podnetPodOn(t *testing.T, app, node string) *corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := s.client.List(context.Background(), &pods, client.InNamespace("podnet-system"),
		client.MatchingLabels{"app.kubernetes.io/name": app}); err != nil {
		t.Fatal(err)
	}
	for i, p := range pods.Items {
		if (node == "" || p.Spec.NodeName == node) && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			return &pods.Items[i]
		}
	}
	t.Fatalf("no running %s pod on node %q", app, node)
	return nil
}

// tokenClient is a client with a token of service account sa bound to pod,
// as the kubelet projects into the pod: what root on the pod's node reads.
// The API server adds the pod's node to such a token's user.
func (s *suite) tokenClient(t *testing.T, sa string, pod *corev1.Pod) client.Client {
	t.Helper()
	token := strings.TrimSpace(s.kubectl(t, "", "create", "token", sa, "-n", "podnet-system", "--duration=10m",
		"--bound-object-kind=Pod", "--bound-object-name="+pod.Name, "--bound-object-uid="+string(pod.UID)))
	cfg, err := s.cluster.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	anon := rest.AnonymousClientConfig(cfg)
	anon.BearerToken = token
	c, err := client.New(anon, client.Options{Scheme: s.client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wantForbidden(t *testing.T, err error, what string) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: %v, want forbidden", what, err)
		return
	}
	t.Logf("%s refused: %v", what, err)
}
