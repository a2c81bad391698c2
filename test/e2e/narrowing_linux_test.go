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
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// An admin narrows the profiles under tenant A's running pods; the agents
// judge the pods again on the profile watch and change them in place or
// detach what is no longer allowed. The tenants' namespaces and profiles
// are their own, apart from the other attacks'.
const (
	narrowNSA = "nar-a"
	narrowNSB = "nar-b"
	// narrowWait bounds every wait generously; the time each narrowing
	// took to reach the pod is logged, not asserted.
	narrowWait = 2 * time.Minute
)

func narrowProfileA(bridge string, mtuMax int, vlans string) string {
	return fmt.Sprintf(`
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: nar-a}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: nar-a}
  networks:
  - name: data
    bridge: {name: %s}
    mtu: {default: 1500, max: %d}
    ipam: {pools: ["192.168.64.0/24"]}
  - name: tagged
    bridge: {name: pnbr-nart, vlan: {allowed: [%q]}}
`, bridge, mtuMax, vlans)
}

// narrowProfileB gives tenant B the bridge tenant A used first.
const narrowProfileB = `
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: nar-b}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: nar-b}
  networks:
  - name: data
    bridge: {name: pnbr-nar1}
    ipam: {pools: ["192.168.65.0/24"]}
`

// testNarrowing: an MTU maximum lowered under a running pod lowers its
// interface's MTU in place; the network moved to another bridge whose old
// bridge goes to tenant B leaves A's pod no port of B's bridge; a VLAN
// range narrowed detaches the interface on the VLAN now refused. Each with
// the condition and an Event naming the change.
func (s *suite) testNarrowing(t *testing.T) {
	for _, ns := range []string{narrowNSA, narrowNSB} {
		s.kubectl(t, "", "create", "namespace", ns)
		s.kubectl(t, "", "label", "namespace", ns, podnetv1.EnabledLabel+"=true", "podnet.io/tenant="+ns)
	}
	s.apply(t, narrowProfileA("pnbr-nar1", 9000, "100-199"))
	s.waitWebhookOffers(t, narrowNSA, "data", "192.168.64.0/24")
	ctx := context.Background()
	a1 := attackPod("a1", narrowNSA, map[string]string{podnetv1.NetworksAnnotation: `[{"name":"data","mtu":9000}]`})
	if err := s.client.Create(ctx, a1); err != nil {
		t.Fatal(err)
	}
	a1 = s.waitNet1(t, narrowNSA, "a1", true, 3*time.Minute)
	nodeNS := s.cluster.Nodes[0].NetNS

	t.Run("MTULoweredInPlace", func(t *testing.T) {
		if mtu := s.podFile(t, narrowNSA, "a1", "/sys/class/net/net1/mtu"); mtu != "9000" {
			t.Fatalf("net1 mtu %s before the change, want 9000", mtu)
		}
		index := s.podFile(t, narrowNSA, "a1", "/sys/class/net/net1/ifindex")
		s.apply(t, narrowProfileA("pnbr-nar1", 1500, "100-199"))
		start := time.Now()
		eventually(t, narrowWait, "net1 mtu lowered to 1500", func(context.Context) error {
			if mtu := s.podFile(t, narrowNSA, "a1", "/sys/class/net/net1/mtu"); mtu != "1500" {
				return fmt.Errorf("mtu %s", mtu)
			}
			return nil
		})
		t.Logf("profile mtu.max lowered: net1 at mtu 1500 after %v", time.Since(start).Round(time.Millisecond))
		if now := s.podFile(t, narrowNSA, "a1", "/sys/class/net/net1/ifindex"); now != index {
			t.Errorf("net1 re-created (ifindex %s → %s), not changed in place", index, now)
		}
		s.waitNarrowCondition(t, narrowNSA, "a1", corev1.ConditionTrue, "GrantNarrowed", "mtu 9000 lowered to 1500")
		s.waitEventNaming(t, narrowNSA, "a1", "GrantNarrowed", "mtu 9000 lowered to 1500")
		s.stillRunning(t, a1)
	})

	t.Run("BridgeReassignedToAnotherTenant", func(t *testing.T) {
		before := bridgePorts(t, nodeNS, "pnbr-nar1")
		if len(before) != 1 {
			t.Fatalf("ports of pnbr-nar1 %v, want a1's alone", before)
		}
		// The admin moves A's network to another bridge, then gives the old
		// one to tenant B.
		s.apply(t, narrowProfileA("pnbr-nar2", 1500, "100-199"))
		start := time.Now()
		s.waitNet1(t, narrowNSA, "a1", false, narrowWait)
		t.Logf("network moved to another bridge: a1's net1 detached after %v", time.Since(start).Round(time.Millisecond))
		s.waitNarrowCondition(t, narrowNSA, "a1", corev1.ConditionFalse, "GrantRevoked", "bridge pnbr-nar1 is now pnbr-nar2")
		s.waitEventNaming(t, narrowNSA, "a1", "GrantRevoked", "bridge pnbr-nar1 is now pnbr-nar2")
		s.stillRunning(t, a1)

		s.apply(t, narrowProfileB)
		s.waitWebhookOffers(t, narrowNSB, "data", "192.168.65.0/24")
		if err := s.client.Create(ctx, attackPod("b1", narrowNSB, nil)); err != nil {
			t.Fatal(err)
		}
		s.waitNet1(t, narrowNSB, "b1", true, 3*time.Minute)
		after := bridgePorts(t, nodeNS, "pnbr-nar1")
		if len(after) != 1 || after[0] == before[0] {
			t.Fatalf("ports of pnbr-nar1 %v after B's pod joined, want B's alone (A's was %s)", after, before[0])
		}
		for _, l := range hostLinks(t, nodeNS) {
			if l == before[0] {
				t.Fatalf("a1's node end %s is still on the node", l)
			}
		}
	})

	t.Run("VLANRangeNarrowedRevokesTheGrant", func(t *testing.T) {
		// What is shown is the judgement reaching the pod: once VLAN 150
		// is out of range, the agent revokes the interface and says why.
		// Whether the interface came up first depends on the node's
		// kernel (bridge VLAN filtering); the detach of a live interface
		// is shown by BridgeReassignedToAnotherTenant above.
		p := attackPod("tagged", narrowNSA, map[string]string{podnetv1.NetworksAnnotation: `[{"name":"tagged","vlan":150}]`})
		if err := s.client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		eventually(t, 3*time.Minute, "the agent judged pod tagged", func(context.Context) error {
			c := networksReady(s.getPod(t, narrowNSA, "tagged"))
			if c == nil {
				return fmt.Errorf("no condition yet")
			}
			t.Logf("pod tagged before the change: %s %s: %s", c.Status, c.Reason, c.Message)
			return nil
		})
		s.apply(t, narrowProfileA("pnbr-nar2", 1500, "100-119"))
		start := time.Now()
		s.waitNarrowCondition(t, narrowNSA, "tagged", corev1.ConditionFalse, "GrantRevoked", `vlan 150: network "tagged": vlan not allowed by profile "nar-a", which allows 100-119`)
		t.Logf("vlan range narrowed: tagged's net1 detached after %v", time.Since(start).Round(time.Millisecond))
		s.waitEventNaming(t, narrowNSA, "tagged", "GrantRevoked", "vlan 150")
	})

	for _, ns := range []string{narrowNSA, narrowNSB} {
		s.kubectl(t, "", "delete", "namespace", ns, "--wait=false")
	}
	s.kubectl(t, "", "delete", "networkprofile", "nar-a", "nar-b", "--ignore-not-found")
}

// podFile reads a file inside a pod's app container.
func (s *suite) podFile(t *testing.T, ns, pod, path string) string {
	t.Helper()
	out, err := s.kubectlErr("", "-n", ns, "exec", pod, "-c", "app", "--", "cat", path)
	if err != nil {
		t.Fatalf("read %s in pod %s/%s: %v", path, ns, pod, err)
	}
	return strings.TrimSpace(out)
}

// bridgePorts lists the ports of a bridge in a node's netns. Reading only.
func bridgePorts(t *testing.T, netns, bridge string) []string {
	t.Helper()
	out, err := exec.Command("ip", "-n", filepath.Base(netns), "-o", "link", "show", "master", bridge).CombinedOutput()
	if err != nil {
		t.Fatalf("ports of %s in %s: %v\n%s", bridge, netns, err, out)
	}
	var ports []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			ports = append(ports, name)
		}
	}
	return ports
}

// waitNarrowCondition waits for the pod's networks-ready condition with
// status, reason and a message containing text.
func (s *suite) waitNarrowCondition(t *testing.T, ns, name string, status corev1.ConditionStatus, reason, text string) {
	t.Helper()
	eventually(t, narrowWait, fmt.Sprintf("pod %s/%s condition %s %s", ns, name, status, reason), func(context.Context) error {
		c := networksReady(s.getPod(t, ns, name))
		if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, text) {
			return fmt.Errorf("condition %+v", c)
		}
		t.Logf("pod %s/%s: %s %s: %s", ns, name, c.Status, c.Reason, c.Message)
		return nil
	})
}

// waitEventNaming waits for an Event of reason on the pod whose message
// contains text.
func (s *suite) waitEventNaming(t *testing.T, ns, pod, reason, text string) {
	t.Helper()
	eventually(t, narrowWait, fmt.Sprintf("event %s naming %q on pod %s/%s", reason, text, ns, pod), func(ctx context.Context) error {
		var evs corev1.EventList
		if err := s.client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == pod && e.Reason == reason && strings.Contains(e.Message, text) {
				t.Logf("event %s %s: %s", e.Type, e.Reason, e.Message)
				return nil
			}
		}
		return fmt.Errorf("no %s event naming %q among %d", reason, text, len(evs.Items))
	})
}
