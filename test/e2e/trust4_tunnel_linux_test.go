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

// Tenant B of the shared-VNI attack: its own namespace and profile, a
// tunnel of the same port and VNI as tenant A's (4789, 7001) to an
// endpoint of its own (198.18.0.6, a second cable into node 1), and a
// range profile of tenant A whose VNIs include a spanning network's.
const (
	tunnelTenantB  = "tunnel-b"
	tunnelProfileB = `
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: atk-tunnel-b}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: b}
  networks:
  - name: tun-b
    tunnel:
      vxlan: {vni: 7001}
      endpoints: [{cidr: 198.18.0.6/32, ports: ["4789"]}]
    ipam: {pools: ["10.202.0.0/24"]}
`
	tunnelSpanProfiles = `
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: atk-span-7150}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: nobody}
  networks:
  - name: overlay-7150
    bridge: {name: pnbr-a7150, vxlan: {vni: 7150}}
---
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: atk-tunnel-range}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: x}
  networks:
  - name: tun-range
    tunnel:
      vxlan: {vnis: ["7100-7199"]}
      endpoints: [{cidr: 198.18.0.2/32, ports: ["4789"]}]
    ipam: {pools: ["10.203.0.0/24"]}
`
)

// tenantBEndpoint is tenant B's far end: a netns joined to node 1 by a
// second cable (198.18.0.5 on the node, 198.18.0.6 outside), with a VXLAN
// device of VNI 7001 back to node 1 in tenant A's overlay subnet.
func (s *suite) tenantBEndpoint(t *testing.T) string {
	t.Helper()
	out, _ := netnstest.NewNetNS(t, "pne2e", "outb")
	node := filepath.Base(s.cluster.Nodes[0].NetNS)
	t.Cleanup(func() { _ = exec.Command("ip", "-n", node, "link", "del", "pnout1").Run() })
	for _, args := range [][]string{
		{"-n", node, "link", "add", "pnout1", "type", "veth", "peer", "name", "wan", "netns", out},
		{"-n", node, "addr", "add", "198.18.0.5/30", "dev", "pnout1"},
		{"-n", out, "addr", "add", "198.18.0.6/30", "dev", "wan"},
		{"-n", node, "link", "set", "pnout1", "up"},
		{"-n", out, "link", "set", "wan", "up"},
	} {
		if b, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	return out
}

// testTunnelVNIShared: tenant A's pod holds a tunnel of port 4789 and
// VNI 7001 on node 1; tenant B's pod, approved for a tunnel of the same
// port and VNI to its own endpoint, is refused on the node with a
// condition naming the port, the VNI and A's pod, and gets no device;
// frames B's endpoint sends in that VNI never reach A's tunnel, while
// A's endpoint's do and A still pings through it. A tunnel of a spanning
// network's port and VNI is refused at admission naming that network,
// and both profiles' status say so.
func (s *suite) testTunnelVNIShared(t *testing.T, m client.Client) {
	ctx := context.Background()
	outA := s.outsideEndpoint(t)
	outB := s.tenantBEndpoint(t)
	s.apply(t, tunnelProfile)
	t.Cleanup(func() { s.kubectl(t, "", "delete", "networkprofile", "atk-tunnel", "--ignore-not-found") })
	s.apply(t, tunnelProfileB)
	t.Cleanup(func() { s.kubectl(t, "", "delete", "networkprofile", "atk-tunnel-b", "--ignore-not-found") })
	s.kubectl(t, "", "create", "namespace", tunnelTenantB)
	t.Cleanup(func() { s.kubectl(t, "", "delete", "namespace", tunnelTenantB, "--wait=false") })
	s.kubectl(t, "", "label", "namespace", tunnelTenantB, podnetv1.EnabledLabel+"=true", "podnet.io/tenant=b")

	annA := map[string]string{podnetv1.NetworksAnnotation: `[{"name":"tun","endpoint":"` + tunnelEndpoint + `"}]`}
	eventually(t, time.Minute, "the webhook offers the tunnel", func(ctx context.Context) error {
		return s.client.Create(ctx, attackPod("probe", attackNS, annA), client.DryRunAll)
	})
	podA := attackPod("tun-shared-a", attackNS, annA)
	if err := m.Create(ctx, podA); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.client.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: attackNS, Name: "tun-shared-a"}})
	})
	podA = s.waitNet1(t, attackNS, "tun-shared-a", true, 3*time.Minute)
	st, err := statusOf(*podA)
	if err != nil {
		t.Fatal(err)
	}
	v4, _ := splitFamilies(ipsOf(st, "net1"))
	if len(v4) == 0 {
		t.Fatalf("network-status of tenant A's pod: %s", podA.Annotations[podnetv1.NetworkStatusAnnotation])
	}
	podIP := strings.Split(v4[0], "/")[0]

	annB := map[string]string{podnetv1.NetworksAnnotation: `[{"name":"tun-b","endpoint":"198.18.0.6:4789"}]`}
	eventually(t, time.Minute, "the webhook offers tenant B's tunnel", func(ctx context.Context) error {
		return s.client.Create(ctx, attackPod("probe", tunnelTenantB, annB), client.DryRunAll)
	})
	if err := s.client.Create(ctx, attackPod("tun-shared-b", tunnelTenantB, annB)); err != nil {
		t.Fatal(err)
	}
	t.Run("SecondPodRefusedNamingTheHolder", func(t *testing.T) {
		eventually(t, 2*time.Minute, "tenant B's pod refused naming the port, the vni and the holder", func(context.Context) error {
			c := networksReady(s.getPod(t, tunnelTenantB, "tun-shared-b"))
			if c == nil || c.Status != corev1.ConditionFalse {
				return fmt.Errorf("condition %+v", c)
			}
			for _, want := range []string{"vxlan port 4789 vni 7001", fmt.Sprintf(`pod "%s/tun-shared-a"`, attackNS)} {
				if !strings.Contains(c.Message, want) {
					return fmt.Errorf("condition message %q does not say %q", c.Message, want)
				}
			}
			t.Logf("refused: %s", c.Message)
			return nil
		})
		// Held, its app never started: nothing to exec into. What it got
		// is in its network status.
		p := s.getPod(t, tunnelTenantB, "tun-shared-b")
		if st, err := statusOf(*p); err == nil && len(ipsOf(st, "net1")) > 0 {
			t.Errorf("tenant B's pod got net1: %v", st)
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.Name == "app" && (c.State.Running != nil || c.RestartCount > 0) {
				t.Errorf("tenant B's app runs without its tunnel: %+v", c.State)
			}
		}
	})

	t.Run("OtherTenantsEndpointCannotInject", func(t *testing.T) {
		bin := buildVXLANSend(t)
		sendBin := filepath.Join(t.TempDir(), "vxlansend")
		if err := os.WriteFile(sendBin, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		send := func(ns, dst, mac, src string) {
			t.Helper()
			if o, err := exec.Command("ip", "netns", "exec", ns, sendBin, dst, "4789", tunnelVNI, mac, src, podIP).CombinedOutput(); err != nil {
				t.Fatalf("send from %s: %v\n%s", ns, err, o)
			}
		}
		const attack, control = "02:ba:d4:00:00:01", "02:ba:d4:00:00:09"
		send(outB, "198.18.0.5", attack, "10.201.0.250")
		send(outA, "198.18.0.1", control, "10.201.0.249")
		neigh := func() (string, error) {
			return s.kubectlErr("", "-n", attackNS, "exec", "tun-shared-a", "-c", "app", "--", "ip", "neigh", "show", "dev", "net1")
		}
		eventually(t, time.Minute, "tenant A's pod learns its own endpoint's sender", func(context.Context) error {
			if o, err := neigh(); err != nil || !strings.Contains(o, control) {
				return fmt.Errorf("neighbours of net1 lack %s: %v\n%s", control, err, o)
			}
			return nil
		})
		if o, err := neigh(); err != nil || strings.Contains(o, attack) {
			t.Fatalf("tenant B's endpoint injected into tenant A's tunnel: net1 learned %s (%v)\n%s", attack, err, o)
		}
		eventually(t, time.Minute, "tenant A's pod still pings its endpoint", func(context.Context) error {
			o, err := s.kubectlErr("", "-n", attackNS, "exec", "tun-shared-a", "-c", "app", "--", "ping", "-c", "1", "-W", "2", "10.201.0.1")
			if err != nil {
				return fmt.Errorf("%w: %s", err, o)
			}
			return nil
		})
	})

	t.Run("SpanningVNIRefusedAtAdmissionAndInStatus", func(t *testing.T) {
		s.apply(t, tunnelSpanProfiles)
		t.Cleanup(func() {
			s.kubectl(t, "", "delete", "networkprofile", "atk-span-7150", "atk-tunnel-range", "--ignore-not-found")
		})
		ask := func(vni int) error {
			ann := map[string]string{podnetv1.NetworksAnnotation: fmt.Sprintf(`[{"name":"tun-range","endpoint":"%s","vni":%d}]`, tunnelEndpoint, vni)}
			return m.Create(context.Background(), attackPod(fmt.Sprintf("tun-range-%d", vni), attackNS, ann), client.DryRunAll)
		}
		eventually(t, time.Minute, "the webhook offers the range and refuses the spanning vni", func(context.Context) error {
			if err := ask(7142); err != nil {
				return fmt.Errorf("a free vni of the range: %w", err)
			}
			err := ask(7150)
			if err == nil {
				return fmt.Errorf("a tunnel of the spanning network's port and vni was admitted")
			}
			for _, want := range []string{"vxlan vni 7150 on endpoint port 4789", `spanning network "overlay-7150"`} {
				if !strings.Contains(err.Error(), want) {
					return fmt.Errorf("denial %q does not say %q", err, want)
				}
			}
			t.Logf("denied: %v", err)
			return nil
		})
		for _, name := range []string{"atk-tunnel-range", "atk-span-7150"} {
			eventually(t, time.Minute, "profile "+name+" status names the clash", func(ctx context.Context) error {
				var p podnetv1.NetworkProfile
				if err := s.client.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
					return err
				}
				for _, c := range p.Status.Conditions {
					if c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "vni 7150 port 4789") {
						t.Logf("profile %s: %s: %s", name, c.Reason, c.Message)
						return nil
					}
				}
				return fmt.Errorf("conditions %+v", p.Status.Conditions)
			})
		}
	})
}
