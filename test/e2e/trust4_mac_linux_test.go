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

// cloneNS is the tenant whose pods' MACs mallory asks for.
const cloneNS = "atk-mc"

// The clone network: a layer-2 bridge that allows static MACs and has no
// macRange, so the kernel chooses the MAC of an interface without one.
const (
	cloneBridge  = "pnbr-atkc"
	cloneProfile = `
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: atk-clone}
spec:
  namespaceSelector:
    matchExpressions: [{key: podnet.io/tenant, operator: In, values: [x, mc]}]
  networks:
  - name: clone
    bridge: {name: ` + cloneBridge + `}
    allowStaticMAC: true
`
)

// testClonedMAC: on a network with allowStaticMAC and no macRange, mallory
// asks for MACs that are others': another tenant's pod's static MAC (its
// MACClaim refuses her, without naming that pod), the node bridge's MAC
// and a MAC the node's bridge learned from another tenant's pod whose MAC
// the kernel chose (the agent refuses both, naming the field and what
// carries the MAC). Her pods get no net1 and the victims keep theirs.
func (s *suite) testClonedMAC(t *testing.T, m client.Client) {
	s.kubectl(t, "", "create", "namespace", cloneNS)
	s.kubectl(t, "", "label", "namespace", cloneNS, podnetv1.EnabledLabel+"=true", "podnet.io/tenant=mc")
	s.apply(t, cloneProfile)
	defer func() {
		s.kubectl(t, "", "delete", "networkprofile", "atk-clone")
		s.kubectl(t, "", "delete", "namespace", cloneNS, "--wait=false")
	}()
	s.waitWebhookOffers(t, attackNS, "clone", cloneBridge)
	s.waitWebhookOffers(t, cloneNS, "clone", cloneBridge)
	ps := &podSet{t: t, admin: s.client}
	defer ps.deleteAll()
	ctx := context.Background()

	const static = "0a:00:00:c1:00:01"
	holder := attackPod("mac-static", cloneNS, map[string]string{podnetv1.NetworksAnnotation: `[{"name":"clone","mac":"` + static + `"}]`})
	quiet := attackPod("mac-kernel", cloneNS, map[string]string{podnetv1.NetworksAnnotation: "clone"})
	for _, p := range []*corev1.Pod{holder, quiet} {
		if err := s.client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		ps.pods = append(ps.pods, client.ObjectKeyFromObject(p))
	}
	if got, err := net1MAC(*s.waitNet1(t, cloneNS, "mac-static", true, 3*time.Minute)); err != nil || got != static {
		t.Fatalf("holder's net1 MAC %q (%v), want %s", got, err, static)
	}
	kernelMAC, err := net1MAC(*s.waitNet1(t, cloneNS, "mac-kernel", true, 3*time.Minute))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("StaticMACOfAnotherTenant", func(t *testing.T) {
		var claim podnetv1.MACClaim
		name := strings.ReplaceAll(static, ":", "-")
		if err := s.client.Get(ctx, client.ObjectKey{Name: name}, &claim); err != nil || claim.Spec.Pod.Name != "mac-static" {
			t.Fatalf("MACClaim %s: %+v (%v), want it held by mac-static though the network has no macRange", name, claim.Spec.Pod, err)
		}
		s.cloneAttempt(t, m, ps, "clone-static", static, podnetv1.ReasonIPAMFailed, []string{"a pod of another namespace", name})
		if got, err := net1MAC(*s.getPod(t, cloneNS, "mac-static")); err != nil || got != static {
			t.Errorf("holder's net1 MAC now %q (%v), want %s", got, err, static)
		}
	})

	t.Run("BridgeMAC", func(t *testing.T) {
		// A bridge without an address of its own takes its lowest port's
		// MAC, so the refusal may name that port instead of the bridge:
		// both carry it.
		br := s.nodeLinkMAC(t, node1, cloneBridge)
		s.cloneAttempt(t, m, ps, "clone-bridge", br, podnetv1.ReasonAttachFailed,
			[]string{"interfaces[0].mac", br, "is the MAC of", "on this node"})
	})

	t.Run("KernelMACOfANeighbour", func(t *testing.T) {
		// One ping and the node's bridge knows the victim's MAC.
		eventually(t, time.Minute, "the bridge learned "+kernelMAC, func(context.Context) error {
			_, _ = s.kubectlErr("", "-n", cloneNS, "exec", "mac-kernel", "-c", "app", "--", "ping", "-6", "-c", "1", "-w", "1", "-I", "net1", "ff02::1")
			if !s.bridgeLearned(t, node1, cloneBridge, kernelMAC) {
				return fmt.Errorf("no FDB entry for %s on %s", kernelMAC, cloneBridge)
			}
			return nil
		})
		s.cloneAttempt(t, m, ps, "clone-kernel", kernelMAC, podnetv1.ReasonAttachFailed,
			[]string{"interfaces[0].mac", kernelMAC, "an FDB entry on port", `of bridge "` + cloneBridge + `"`})
		if got, err := net1MAC(*s.getPod(t, cloneNS, "mac-kernel")); err != nil || got != kernelMAC {
			t.Errorf("victim's net1 MAC now %q (%v), want %s", got, err, kernelMAC)
		}
	})
}

// cloneAttempt has mallory ask for mac as the static MAC of a pod on the
// clone network: it is admitted (the webhook cannot know whose the MAC
// is), and its condition has reason and says each of want; it has no
// net1, and its app never starts.
func (s *suite) cloneAttempt(t *testing.T, m client.Client, ps *podSet, name, mac, reason string, want []string) {
	t.Helper()
	p := attackPod(name, attackNS, map[string]string{podnetv1.NetworksAnnotation: `[{"name":"clone","mac":"` + mac + `"}]`})
	if err := m.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	ps.pods = append(ps.pods, client.ObjectKeyFromObject(p))
	s.waitCondition(t, attackNS, name, reason)
	got := s.getPod(t, attackNS, name)
	msg := networksReady(got).Message
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("condition %q does not say %q", msg, w)
		}
	}
	if strings.Contains(msg, "mac-static") || strings.Contains(msg, "mac-kernel") || strings.Contains(msg, cloneNS) {
		t.Errorf("condition %q names the other tenant's pod or namespace", msg)
	}
	if have, err := net1MAC(*got); err == nil {
		t.Errorf("%s reports net1 with MAC %s", name, have)
	}
	for _, c := range got.Status.ContainerStatuses {
		if c.State.Running != nil {
			t.Errorf("container %s of %s runs without its networks", c.Name, name)
		}
	}
	t.Logf("%s refused: %s", name, msg)
}

// nodeNetNS is the name of node's network namespace.
func (s *suite) nodeNetNS(t *testing.T, node string) string {
	t.Helper()
	for _, n := range s.cluster.Nodes {
		if n.Name == node {
			return filepath.Base(n.NetNS)
		}
	}
	t.Fatalf("no node %s in the cluster", node)
	return ""
}

// nodeLinkMAC reads the MAC of link in node's network namespace.
func (s *suite) nodeLinkMAC(t *testing.T, node, link string) string {
	t.Helper()
	return linkMAC(t, s.nodeNetNS(t, node), link)
}

// linkMAC reads the MAC of link in the named network namespace.
func linkMAC(t *testing.T, netns, link string) string {
	t.Helper()
	out, err := exec.Command("ip", "-n", netns, "-o", "link", "show", link).CombinedOutput()
	if err != nil {
		t.Fatalf("link %s in %s: %v\n%s", link, netns, err, out)
	}
	f := strings.Fields(string(out))
	for i := range f[:len(f)-1] {
		if f[i] == "link/ether" {
			return f[i+1]
		}
	}
	t.Fatalf("link %s in %s has no MAC: %s", link, netns, out)
	return ""
}

// bridgeLearned says whether bridge on node holds an FDB entry for mac.
func (s *suite) bridgeLearned(t *testing.T, node, bridge, mac string) bool {
	t.Helper()
	out, err := exec.Command("bridge", "-n", s.nodeNetNS(t, node), "fdb", "show", "br", bridge).CombinedOutput()
	if err != nil {
		t.Fatalf("fdb of %s on %s: %v\n%s", bridge, node, err, out)
	}
	return strings.Contains(string(out), mac+" ")
}
