package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/netnstest"
)

// The tunnel network: a point-to-point VXLAN tunnel to one endpoint
// outside the cluster (198.18.0.2, port 4789, VNI 7001), the far end of a
// cable the test plugs into node 1; the tunnel's own network is
// 10.201.0.0/24, the endpoint 10.201.0.1.
const (
	tunnelEndpoint = "198.18.0.2:4789"
	tunnelVNI      = "7001"
	tunnelProfile  = `
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: atk-tunnel}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: x}
  networks:
  - name: tun
    tunnel:
      vxlan: {vni: 7001}
      endpoints: [{cidr: 198.18.0.2/32, ports: ["4789"]}]
    ipam: {pools: ["10.201.0.0/24"], gateways: ["10.201.0.1"]}
    allowRawSockets: true
`
)

// outsideEndpoint makes the peer outside the cluster: a netns of its own
// joined to node 1 by a veth (198.18.0.1 on the node, 198.18.0.2 outside,
// as a cable to a router would be), with a VXLAN device back to node 1
// carrying 10.201.0.1. It is removed when the test ends.
func (s *suite) outsideEndpoint(t *testing.T) string {
	t.Helper()
	out, _ := netnstest.NewNetNS(t, "pne2e", "out")
	node := filepath.Base(s.cluster.Nodes[0].NetNS)
	run := func(args ...string) {
		t.Helper()
		if b, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	run("-n", node, "link", "add", "pnout0", "type", "veth", "peer", "name", "wan", "netns", out)
	t.Cleanup(func() { _ = exec.Command("ip", "-n", node, "link", "del", "pnout0").Run() })
	run("-n", node, "addr", "add", "198.18.0.1/30", "dev", "pnout0")
	run("-n", out, "addr", "add", "198.18.0.2/30", "dev", "wan")
	run("-n", node, "link", "set", "pnout0", "up")
	run("-n", out, "link", "set", "wan", "up")
	run("-n", out, "link", "add", "vx0", "type", "vxlan", "id", tunnelVNI, "remote", "198.18.0.1", "local", "198.18.0.2", "dstport", "4789", "nolearning")
	run("-n", out, "addr", "add", "10.201.0.1/24", "dev", "vx0")
	run("-n", out, "link", "set", "vx0", "up")
	return out
}

// testTunnels: a tenant's pod gets a VXLAN tunnel to the approved
// endpoint outside the cluster and pings through it; an endpoint the
// profile does not list is refused at admission, naming the field, the
// value and the limit; another pod on the node sending into the tunnel's
// VNI on the node's port is dropped, while the endpoint itself gets
// through.
func (s *suite) testTunnels(t *testing.T, m client.Client) {
	out := s.outsideEndpoint(t)
	s.apply(t, tunnelProfile)
	t.Cleanup(func() { s.kubectl(t, "", "delete", "networkprofile", "atk-tunnel", "--ignore-not-found") })
	ann := map[string]string{podnetv1.NetworksAnnotation: `[{"name":"tun","endpoint":"` + tunnelEndpoint + `"}]`}
	eventually(t, time.Minute, "the webhook offers the tunnel", func(ctx context.Context) error {
		return s.client.Create(ctx, attackPod("probe", attackNS, ann), client.DryRunAll)
	})

	t.Run("UnapprovedEndpointDenied", func(t *testing.T) {
		p := attackPod("tun-elsewhere", attackNS, map[string]string{podnetv1.NetworksAnnotation: `[{"name":"tun","endpoint":"198.18.0.3:4789"}]`})
		err := m.Create(context.Background(), p)
		if err == nil {
			t.Fatal("a pod naming an endpoint the profile does not list was admitted")
		}
		for _, want := range []string{"endpoint", "198.18.0.3:4789", "198.18.0.2/32 ports 4789"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("denial %q does not say %q", err, want)
			}
		}
		t.Logf("denied: %v", err)
	})

	pod := attackPod("tun", attackNS, ann)
	if err := m.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.client.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: attackNS, Name: "tun"}})
	})
	pod = s.waitNet1(t, attackNS, "tun", true, 3*time.Minute)
	st, err := statusOf(*pod)
	if err != nil {
		t.Fatal(err)
	}
	v4, _ := splitFamilies(ipsOf(st, "net1"))
	if len(v4) == 0 || !strings.Contains(pod.Annotations[podnetv1.NetworkStatusAnnotation], `"podnet.io/tunnel":{"kind":"vxlan-tunnel","endpoint":"`+tunnelEndpoint+`","vni":7001}`) {
		t.Fatalf("network-status of the tunnel pod: %s", pod.Annotations[podnetv1.NetworkStatusAnnotation])
	}
	podIP := strings.Split(v4[0], "/")[0]

	t.Run("PingThroughTheTunnel", func(t *testing.T) {
		eventually(t, time.Minute, "the pod pings the endpoint's tunnel address", func(context.Context) error {
			o, err := s.kubectlErr("", "-n", attackNS, "exec", "tun", "-c", "app", "--", "ping", "-c", "1", "-W", "2", "10.201.0.1")
			if err != nil {
				return fmt.Errorf("%w: %s", err, o)
			}
			return nil
		})
	})

	t.Run("InjectionIntoTheTunnelPortDropped", func(t *testing.T) {
		s.tunnelInjection(t, out, podIP)
	})
}

// tunnelInjection: a pod of a namespace that never opted in, on the
// tunnel pod's node, sends VXLAN-encapsulated ARP requests for the tunnel
// pod's address in the tunnel's VNI to its node's port; then the endpoint
// sends the same (the control, after the attack). The tunnel pod learns
// the endpoint's sender and never the attacker's.
func (s *suite) tunnelInjection(t *testing.T, out, podIP string) {
	bin := buildVXLANSend(t)
	const ns = "tunnel-attacker"
	s.kubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() { s.kubectl(t, "", "delete", "namespace", ns, "--wait=false") })
	s.apply(t, fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: attacker, namespace: %s}
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 0
  containers:
  - name: app
    image: localhost/podnet/busybox:dev
    imagePullPolicy: Never
    command: [sleep, "86400"]
`, ns, node1))
	s.kubectl(t, "", "-n", ns, "wait", "--for=condition=Ready", "pod/attacker", "--timeout=3m")
	s.kubectl(t, string(bin), "-n", ns, "exec", "-i", "attacker", "--", "sh", "-c", "cat > /tmp/vxlansend && chmod +x /tmp/vxlansend")
	n1 := s.cluster.Nodes[0]
	attack := map[string]string{n1.IP: "02:ba:d1:00:00:01", "198.18.0.1": "02:ba:d1:00:00:02"}
	for dst, mac := range attack {
		s.kubectl(t, "", "-n", ns, "exec", "attacker", "--", "/tmp/vxlansend", dst, "4789", tunnelVNI, mac, "10.201.0.250", podIP)
	}
	control := "02:ba:d1:00:00:09"
	sendBin := filepath.Join(t.TempDir(), "vxlansend")
	if err := os.WriteFile(sendBin, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if o, err := exec.Command("ip", "netns", "exec", out, sendBin, "198.18.0.1", "4789", tunnelVNI, control, "10.201.0.249", podIP).CombinedOutput(); err != nil {
		t.Fatalf("control from the endpoint: %v\n%s", err, o)
	}
	neigh := func() (string, error) {
		return s.kubectlErr("", "-n", attackNS, "exec", "tun", "-c", "app", "--", "ip", "neigh", "show", "dev", "net1")
	}
	eventually(t, time.Minute, "the tunnel pod learns the endpoint's sender", func(context.Context) error {
		if o, err := neigh(); err != nil || !strings.Contains(o, control) {
			return fmt.Errorf("neighbours of net1 lack %s: %v\n%s", control, err, o)
		}
		return nil
	})
	o, err := neigh()
	if err != nil {
		t.Fatal(err)
	}
	for dst, mac := range attack {
		if strings.Contains(o, mac) {
			t.Errorf("the tunnel took the attacker's frame sent to %s: net1 learned %s\n%s", dst, mac, o)
		}
	}
}
