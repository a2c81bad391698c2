package peers_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"podnet.io/podnet/agent/peers"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/underlay"
	"podnet.io/podnet/test/netnstest"
)

// TestRootTunnelPortAndVNIHeldByOnePod: two tenants' pods on one node ask
// for point-to-point VXLAN tunnels of one port and VNI to endpoints of
// their own, in the agent's order (lock, then device), against the real
// dataplane and the real table in a throwaway node netns. The second is
// refused before any lock, naming the port, the VNI and the first pod;
// the table locks the VNI to the first's endpoint only; frames the second
// tenant's endpoint sends in that VNI never reach the first pod's tunnel,
// which still carries its own endpoint's traffic.
func TestRootTunnelPortAndVNIHeldByOnePod(t *testing.T) {
	netnstest.RequireRoot(t)
	node, nodePath := netnstest.NewNetNS(t, "pnpeers", "node")
	outA, _ := netnstest.NewNetNS(t, "pnpeers", "outa")
	outB, _ := netnstest.NewNetNS(t, "pnpeers", "outb")
	for _, side := range []struct{ ns, nodeIf, nodeIP, outIP string }{
		{outA, "upa", "10.99.0.1/24", "10.99.0.2"}, {outB, "upb", "10.99.1.1/24", "10.99.1.2"},
	} {
		nodeIP := strings.Split(side.nodeIP, "/")[0]
		for _, cmd := range [][]string{
			{"ip", "-n", node, "link", "add", side.nodeIf, "type", "veth", "peer", "name", "wan", "netns", side.ns},
			{"ip", "-n", node, "addr", "add", side.nodeIP, "dev", side.nodeIf},
			{"ip", "-n", side.ns, "addr", "add", side.outIP + "/24", "dev", "wan"},
			{"ip", "-n", node, "link", "set", side.nodeIf, "up"},
			{"ip", "-n", side.ns, "link", "set", "wan", "up"},
			{"ip", "-n", side.ns, "link", "add", "vx0", "type", "vxlan", "id", "5001", "remote", nodeIP, "local", side.outIP, "dstport", "4789", "nolearning"},
			// IPv4 only: no router solicitations or reports of its own
			// to blur what the pod's tunnel counts.
			{"ip", "netns", "exec", side.ns, "sysctl", "-qw", "net.ipv6.conf.vx0.disable_ipv6=1"},
			{"ip", "-n", side.ns, "link", "set", "vx0", "up"},
		} {
			netnstest.Run(t, cmd...)
		}
	}
	netnstest.Run(t, "ip", "-n", outA, "addr", "add", "10.71.0.1/24", "dev", "vx0")
	// Tenant B's endpoint, inside its own approved range, speaks in the
	// same overlay subnet to reach tenant A's pod.
	netnstest.Run(t, "ip", "-n", outB, "addr", "add", "10.71.0.9/24", "dev", "vx0")

	c := fake.NewClientBuilder().WithObjects(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.99.0.1"}}}}).Build()
	d := &dataplane.Dataplane{HostNetNS: nodePath}
	t.Cleanup(d.Close)
	tbl := &underlay.Table{NetNS: nodePath}
	t.Cleanup(func() { _ = tbl.Apply(underlay.Ruleset{}) })
	w := &peers.Watch{NodeName: "n1", Nodes: c, Writer: c, Dataplane: d, Lock: tbl, Resync: time.Hour}
	ctx := context.Background()

	attach := func(pod, remote, addr string) (string, error) {
		ns, path := netnstest.NewNetNS(t, "pnpeers", "pod")
		uid := "uid-" + netnstest.RandomHex(4)
		ap := netip.MustParseAddrPort(remote)
		tun := underlay.PointToPoint(ap.Port(), 5001, underlay.IPv4, []netip.Addr{ap.Addr()})
		if err := w.TrackTunnels(ctx, uid, pod, []underlay.Tunnel{tun}); err != nil {
			return ns, err
		}
		_, ipn, _ := net.ParseCIDR(addr)
		ipn.IP = net.ParseIP(strings.Split(addr, "/")[0]).To4()
		_, err := d.Apply(ctx, dataplane.Pod{UID: uid, NetNS: path, Interfaces: []dataplane.Interface{{
			Name: "net1", Kind: dataplane.KindVXLANTunnel, Addresses: []net.IPNet{*ipn},
			Tunnel: &dataplane.Tunnel{Remote: ap, VNI: 5001},
		}}})
		return ns, err
	}
	podA, err := attach("ta/a", "10.99.0.2:4789", "10.71.0.2/24")
	if err != nil {
		t.Fatal(err)
	}
	podB, err := attach("tb/b", "10.99.1.2:4789", "10.71.0.3/24")
	if err == nil || !strings.Contains(err.Error(), "vxlan port 4789 vni 5001") || !strings.Contains(err.Error(), `pod "ta/a"`) {
		t.Fatalf("the second pod's tunnel of one port and vni: %v", err)
	}
	if l, _ := netnstest.Handle(t, podB).LinkByName("net1"); l != nil {
		t.Fatal("the refused pod got a tunnel device")
	}
	locks, err := tbl.PointToPointTunnels()
	if err != nil || len(locks) != 1 || locks[0].Name != "tun-4789-5001" || fmt.Sprint(locks[0].Peers) != "[10.99.0.2]" {
		t.Fatalf("the table's tunnel locks: %+v, %v", locks, err)
	}

	rx := func() uint64 {
		l, err := netnstest.Handle(t, podA).LinkByName("net1")
		if err != nil {
			t.Fatal(err)
		}
		return l.Attrs().Statistics.RxPackets
	}
	before := rx()
	// B's endpoint asks for A's pod: its ARP requests go to the node's
	// port in the VNI from B's endpoint address.
	_ = exec.Command("ip", "netns", "exec", outB, "busybox", "ping", "-c", "3", "-i", "0.2", "-W", "1", "10.71.0.2").Run()
	if got := rx(); got != before {
		t.Fatalf("the first pod's tunnel received %d frames from the second tenant's endpoint", got-before)
	}
	if o, err := exec.Command("ip", "netns", "exec", outA, "busybox", "ping", "-c", "3", "-W", "2", "10.71.0.2").CombinedOutput(); err != nil {
		t.Fatalf("the first pod's own endpoint no longer reaches it: %v\n%s\n%s", err, o, netnstest.Run(t, "ip", "-n", podA, "-d", "-s", "link"))
	}
	if got := rx(); got == before {
		t.Fatal("the control reached the pod without its tunnel counting a frame")
	}
}
