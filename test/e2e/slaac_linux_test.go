package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/localcluster"
)

const slaacNS = "slaac"

// slaacProfile offers a macvlan network on the nodes' data NIC whose pods
// take router advertisements (IPv4 from the pool, IPv6 by SLAAC; raw
// sockets, for ping), and a bridge network whose pods do not.
var slaacProfile = fmt.Sprintf(`
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: e2e-slaac}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: sl}
  networks:
  - name: routed
    macvlan: {master: %s, mode: bridge}
    acceptRouterAdvertisements: true
    allowRawSockets: true
    ipam: {pools: ["192.168.69.0/24"]}
  - name: quiet
    bridge: {name: pnbr-quiet}
    ipam: {pools: ["192.168.74.0/24"]}
`, localcluster.DataNIC)

// testSLAAC: a router outside podnet (a macvlan of node 2's data NIC in a
// netns of its own, sending router advertisements of fd00:69::/64) serves
// a pod on node 1 that asks for slaac: the pod's network-status reports
// the address the kernel made from the prefix, the pod reaches the router
// from it, through the pod link's port security, and the interface stays
// (the address is in no pool, and the agent's judgement leaves it alone). A network that does
// not take router advertisements refuses slaac at admission.
func (s *suite) testSLAAC(t *testing.T) {
	ctx := context.Background()
	router, _ := s.outsideHost(t, "raout0", "fd00:69::1/64")
	ra := exec.Command("ip", "netns", "exec", router, buildL2SpoofBinary(t), "advertise", "-i", "raout0", "-prefix", "fd00:69::")
	if err := ra.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ra.Process.Kill(); _ = ra.Wait() })

	s.tenantWith(t, "e2e-slaac", slaacProfile, slaacNS, "sl")
	s.waitWebhookOffers(t, slaacNS, "routed", "192.168.69.0/24")
	if err := s.client.Create(ctx, attackPod("auto", slaacNS, map[string]string{podnetv1.NetworksAnnotation: `[{"name": "routed", "slaac": true}]`})); err != nil {
		t.Fatal(err)
	}
	s.waitNet1(t, slaacNS, "auto", true, 3*time.Minute)
	var addr string
	eventually(t, time.Minute, "network-status of pod auto reporting an address of fd00:69::/64", func(ctx context.Context) error {
		p := s.getPod(t, slaacNS, "auto")
		var status []podnetv1.NetworkStatus
		if err := json.Unmarshal([]byte(p.Annotations[podnetv1.NetworkStatusAnnotation]), &status); err != nil {
			return fmt.Errorf("network-status %q: %w", p.Annotations[podnetv1.NetworkStatusAnnotation], err)
		}
		for _, e := range status {
			for _, ip := range e.IPs {
				if e.Interface == "net1" && strings.HasPrefix(ip, "fd00:69::") {
					addr = strings.Split(ip, "/")[0]
					return nil
				}
			}
		}
		return fmt.Errorf("network-status %+v", status)
	})
	// The pod's only global IPv6 address is the SLAAC one: ping's source.
	if out, err := s.kubectlErr("", "-n", slaacNS, "exec", "auto", "-c", "app", "--", "ping", "-6", "-c", "3", "-W", "2", "fd00:69::1"); err != nil {
		diag, _ := s.kubectlErr("", "-n", slaacNS, "exec", "auto", "-c", "app", "--", "sh", "-c", "ip link; ip -6 addr; ip -6 route")
		logs, _ := s.kubectlErr("", "-n", "podnet-system", "logs", "-l", "app.kubernetes.io/name=podnet-agent", "--tail=200", "--prefix")
		evs, _ := s.kubectlErr("", "-n", slaacNS, "get", "events", "-o", "wide")
		diag += "\nagent logs:\n" + logs + "\nevents:\n" + evs
		t.Fatalf("the pod does not reach the router from its SLAAC address %s: %v\n%s\nin the pod:\n%s", addr, err, out, diag)
	}
	// The agent judges the grant again once the status is written: the
	// address from the router's prefix is in no pool, and must not count.
	for range 5 {
		time.Sleep(time.Second)
		if c := networksReady(s.getPod(t, slaacNS, "auto")); c == nil || c.Status != corev1.ConditionTrue {
			t.Fatalf("the SLAAC interface did not stay: condition %+v", c)
		}
	}

	err := s.client.Create(ctx, attackPod("refused", slaacNS, map[string]string{podnetv1.NetworksAnnotation: `[{"name": "quiet", "slaac": true}]`}))
	if err == nil || !strings.Contains(err.Error(), "acceptRouterAdvertisements is not set") {
		t.Fatalf("slaac on a network without router advertisements: %v", err)
	}
}
