package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/test/netnstest"
)

const wireCheckNS = "wirecheck"

// wireCheckProfile offers a macvlan network on the nodes' data NIC whose
// addresses are checked on the wire, and whose gateway must answer.
var wireCheckProfile = fmt.Sprintf(`
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: e2e-wirecheck}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: wc}
  networks:
  - name: checked
    macvlan: {master: %s, mode: bridge}
    addressCheck: {duplicates: true, gateway: true}
    ipam:
      pools: ["192.168.67.0/24", "fd00:67::/64"]
      gateways: ["192.168.67.1"]
      allowStatic: true
`, localcluster.DataNIC)

// testAddressCheck: a host outside podnet on the data NIC's segment (a
// macvlan link of node 2's data NIC, in a netns of its own) is the
// network's gateway and holds 192.168.67.200 and fd00:67::200. A pod on node
// 1 whose static addresses are free gets its interface after the checks;
// a pod that asks for .200 does not: its condition and an Event say
// AddressConflict and name the address and the host's MAC, and its app
// stays held. Once the host lets the address go, the agent's next attempt
// attaches it.
func (s *suite) testAddressCheck(t *testing.T) {
	ctx := context.Background()
	explain := strings.Join(strings.Fields(s.kubectl(t, "", "explain", "networkprofiles.spec.networks.addressCheck")), " ")
	if !strings.Contains(explain, "ARP probes") {
		t.Errorf("kubectl explain does not teach addressCheck:\n%s", explain)
	}
	n2 := filepath.Base(s.cluster.Nodes[1].NetNS)
	outside, _ := netnstest.NewNetNS(t, "pne2e", "wcout")
	runIP(t, "-n", n2, "link", "add", "wcout0", "link", s.cluster.Nodes[1].DataNIC, "type", "macvlan", "mode", "bridge")
	runIP(t, "-n", n2, "link", "set", "wcout0", "netns", outside)
	for _, a := range []string{"192.168.67.1/24", "192.168.67.200/24"} {
		runIP(t, "-n", outside, "addr", "add", a, "dev", "wcout0")
	}
	runIP(t, "-n", outside, "addr", "add", "fd00:67::200/64", "dev", "wcout0", "nodad")
	runIP(t, "-n", outside, "link", "set", "wcout0", "up")
	outsideMAC := linkMAC(t, outside, "wcout0")

	s.apply(t, wireCheckProfile)
	s.kubectl(t, "", "create", "namespace", wireCheckNS)
	s.kubectl(t, "", "label", "namespace", wireCheckNS, podnetv1.EnabledLabel+"=true", "podnet.io/tenant=wc")
	t.Cleanup(func() {
		s.kubectl(t, "", "delete", "namespace", wireCheckNS, "--ignore-not-found", "--wait=false")
		s.kubectl(t, "", "delete", "networkprofile", "e2e-wirecheck", "--ignore-not-found", "--wait=false")
	})
	s.waitWebhookOffers(t, wireCheckNS, "checked", "192.168.67.0/24")
	static := func(v4, v6 string) map[string]string {
		return map[string]string{podnetv1.NetworksAnnotation: fmt.Sprintf(`[{"name": "checked", "ips": [%q, %q]}]`, v4, v6)}
	}
	for name, ann := range map[string]map[string]string{
		"free": static("192.168.67.10/24", "fd00:67::10/64"),
		"dup4": static("192.168.67.200/24", "fd00:67::11/64"),
		"dup6": static("192.168.67.12/24", "fd00:67::200/64"),
	} {
		if err := s.client.Create(ctx, attackPod(name, wireCheckNS, ann)); err != nil {
			t.Fatal(err)
		}
	}
	s.waitNet1(t, wireCheckNS, "free", true, 3*time.Minute)
	if out := s.kubectl(t, "", "-n", wireCheckNS, "exec", "free", "-c", "app", "--", "ip", "-o", "addr", "show", "net1"); !strings.Contains(out, "192.168.67.10/24") || !strings.Contains(out, "fd00:67::10/64") {
		t.Fatalf("the checked interface lacks its addresses: %s", out)
	}
	for name, addr := range map[string]string{"dup4": "192.168.67.200", "dup6": "fd00:67::200"} {
		s.waitCondition(t, wireCheckNS, name, podnetv1.ReasonAddressConflict)
		s.waitEventNaming(t, wireCheckNS, name, podnetv1.ReasonAddressConflict, addr+" is in use on its network by MAC "+outsideMAC)
		if p := s.getPod(t, wireCheckNS, name); appStarted(p) {
			t.Fatalf("pod %s started its app with an address another host holds: %+v", name, p.Status.ContainerStatuses)
		}
	}

	runIP(t, "-n", outside, "addr", "del", "192.168.67.200/24", "dev", "wcout0")
	s.waitNet1(t, wireCheckNS, "dup4", true, 3*time.Minute)
	if c := networksReady(s.getPod(t, wireCheckNS, "dup4")); c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("dup4 after the outside host let 192.168.67.200 go: condition %+v", c)
	}
}

// appStarted reports whether the pod's app container has run.
func appStarted(p *corev1.Pod) bool {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == "app" && (c.State.Running != nil || c.State.Terminated != nil || c.LastTerminationState.Terminated != nil) {
			return true
		}
	}
	return false
}
