package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/hack/localcluster"
)

// spanProfile grants tenant-a the networks that span the two nodes. The
// macvlan one sits on each node's data NIC, which the local cluster joins
// to the other node's as a switch port would. Each network lets its pods
// keep NET_RAW: the tests ping and arping with busybox, whose ping opens
// only raw ICMP sockets.
var spanProfile = fmt.Sprintf(`
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata:
  name: e2e-span
spec:
  namespaceSelector:
    matchLabels: {tenant: a}
  networks:
  - name: span-mv
    allowRawSockets: true
    macvlan: {master: %[1]s, mode: bridge}
    ipam:
      pools: ["192.168.60.0/24", "fd00:60::/64"]
  - name: span-up
    allowRawSockets: true
    bridge: {name: pnbr-e2up, uplink: {interface: %[1]s}}
    ipam:
      pools: ["192.168.61.0/24", "fd00:61::/64"]
  - name: span-vx
    allowRawSockets: true
    bridge: {name: %[2]s, vxlan: {vni: %[3]d}}
    ipam:
      pools: ["192.168.62.0/24", "fd00:62::/64"]
      allowStatic: true
`, localcluster.DataNIC, spanVXBridge, spanVNI)

const (
	spanVXBridge = "pnbr-e2vx"
	spanVNI      = 4242
	// spanVXMTU is the pod MTU the overlay computes: the profile's
	// underlayMTU (default 1500, the local cluster's underlay veth) minus
	// 50 bytes of VXLAN over IPv4 (the nodes' InternalIPs are IPv4).
	spanVXMTU = 1500 - 50
)

// spanPods runs one pod of network on each node (Deployments app-1 on
// node 1 and app-2 on node 2) and returns them once both are Ready with
// net1, node 1's first.
func (s *suite) spanPods(t *testing.T, app, network string) (corev1.Pod, corev1.Pod) {
	t.Helper()
	s.apply(t, deployment(app+"-1", node1, network, 1))
	s.apply(t, deployment(app+"-2", node2, network, 1))
	a := s.waitPodsWith(t, app+"-1", 1, "net1")[0]
	b := s.waitPodsWith(t, app+"-2", 1, "net1")[0]
	if a.Spec.NodeName != node1 || b.Spec.NodeName != node2 {
		t.Fatalf("pods on %s and %s, want %s and %s", a.Spec.NodeName, b.Spec.NodeName, node1, node2)
	}
	return a, b
}

// deleteSpanPods deletes both Deployments of app and waits until their
// pods are gone.
func (s *suite) deleteSpanPods(t *testing.T, app string) {
	t.Helper()
	s.kubectl(t, "", "-n", tenantNS, "delete", "deployment", app+"-1", app+"-2")
	eventually(t, 2*time.Minute, "pods of "+app+" gone", func(ctx context.Context) error {
		for _, d := range []string{app + "-1", app + "-2"} {
			if pods, err := s.pods(ctx, d); err != nil || len(pods) > 0 {
				return fmt.Errorf("%d pods of %s (%v)", len(pods), d, err)
			}
		}
		return nil
	})
}

// checkSpan proves that pods a and b, on different nodes, share one layer-2
// network over net1: their addresses differ; each pings every address of
// the other (IPv4 and IPv6, both ways); each then holds a resolved
// neighbour entry for the other's addresses (ARP and ND crossed the
// nodes); an ARP broadcast from each is answered by the other; and net1
// has the MTU wantMTU in both.
func (s *suite) checkSpan(t *testing.T, a, b corev1.Pod, wantMTU int) {
	t.Helper()
	addrs := map[string][]string{}
	for _, p := range []corev1.Pod{a, b} {
		st, err := statusOf(p)
		if err != nil {
			t.Fatal(err)
		}
		addrs[p.Name] = ipsOf(st, "net1")
		if v4, v6 := splitFamilies(addrs[p.Name]); len(v4) != 1 || len(v6) != 1 {
			t.Fatalf("pod %s: want one IPv4 and one IPv6 address on net1, have %v", p.Name, addrs[p.Name])
		}
	}
	for _, ip := range addrs[a.Name] {
		for _, other := range addrs[b.Name] {
			if ip == other {
				t.Fatalf("pods %s and %s on two nodes share address %s", a.Name, b.Name, ip)
			}
		}
	}
	for _, dir := range [][2]corev1.Pod{{a, b}, {b, a}} {
		from, to := dir[0], dir[1]
		for _, ip := range addrs[to.Name] {
			if out, err := s.exec(from.Name, "ping", "-c", "2", "-W", "3", ip); err != nil {
				t.Errorf("ping %s from %s (%s) to %s (%s) over net1: %v\n%s", ip, from.Name, from.Spec.NodeName, to.Name, to.Spec.NodeName, err, out)
			}
		}
		neigh, err := s.exec(from.Name, "ip", "neigh", "show", "dev", "net1")
		if err != nil {
			t.Fatal(err)
		}
		for _, ip := range addrs[to.Name] {
			if !hasResolvedNeighbour(neigh, ip) {
				t.Errorf("pod %s has no resolved neighbour entry for %s (%s) on net1:\n%s", from.Name, ip, to.Spec.NodeName, neigh)
			}
		}
		// arping -b keeps every request a broadcast: each answer is a
		// broadcast frame that reached the other node.
		v4, _ := splitFamilies(addrs[to.Name])
		out, err := s.exec(from.Name, "arping", "-b", "-c", "2", "-w", "5", "-I", "net1", v4[0])
		if err != nil || !strings.Contains(out, "Received ") || strings.Contains(out, "Received 0 ") {
			t.Errorf("broadcast ARP from %s (%s) for %s not answered across nodes: %v\n%s", from.Name, from.Spec.NodeName, v4[0], err, out)
		}
		mtu, err := s.exec(from.Name, "cat", "/sys/class/net/net1/mtu")
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := strconv.Atoi(strings.TrimSpace(mtu)); got != wantMTU {
			t.Errorf("pod %s: net1 MTU %d, want %d", from.Name, got, wantMTU)
		}
	}
}

func splitFamilies(ips []string) (v4, v6 []string) {
	for _, ip := range ips {
		if strings.Contains(ip, ":") {
			v6 = append(v6, ip)
		} else {
			v4 = append(v4, ip)
		}
	}
	return v4, v6
}

// hasResolvedNeighbour reports whether `ip neigh show` output has an entry
// for ip with a link-layer address (not INCOMPLETE or FAILED).
func hasResolvedNeighbour(out, ip string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && f[0] == ip && strings.Contains(line, " lladdr ") {
			return true
		}
	}
	return false
}

// nodeLinkMTU reads the MTU of a link in a node's network namespace.
// Reading only.
func nodeLinkMTU(t *testing.T, netns, link string) int {
	t.Helper()
	out, err := exec.Command("ip", "-n", filepath.Base(netns), "-o", "link", "show", link).CombinedOutput()
	if err != nil {
		t.Fatalf("show %s in %s: %v\n%s", link, netns, err, out)
	}
	f := strings.Fields(string(out))
	for i := range f[:len(f)-1] {
		if f[i] == "mtu" {
			if mtu, err := strconv.Atoi(f[i+1]); err == nil {
				return mtu
			}
		}
	}
	t.Fatalf("no MTU for %s in %s: %s", link, netns, out)
	return 0
}

// testSpan: networks that reach across nodes, each proven with a pod on
// either node.
func (s *suite) testSpan(t *testing.T) {
	s.apply(t, spanProfile)
	t.Cleanup(func() { s.kubectl(t, "", "delete", "networkprofile", "e2e-span", "--wait=false") })
	t.Run("MacvlanOnDataNIC", s.testSpanMacvlan)
	t.Run("BridgeUplinkOnDataNIC", s.testSpanUplink)
	t.Run("BridgeVXLAN", s.testSpanVXLAN)
	t.Run("VXLANUnderlayLocked", s.testOverlayLocked)
	// make bench's TestBenchSpan at its smallest size, on this cluster.
	t.Run("BenchSmoke", func(t *testing.T) {
		s.benchSpan(t, 1, 3)
		for _, app := range []string{"rtt-vx-1", "rtt-vx-2", "rtt-local"} {
			s.kubectl(t, "", "-n", tenantNS, "delete", "deployment", app, "--wait=false")
		}
	})
}

// testSpanMacvlan: macvlan pods on the data NIC of each node reach each
// other through the data NICs' link; net1 inherits the data NIC's MTU.
func (s *suite) testSpanMacvlan(t *testing.T) {
	n1 := s.cluster.Nodes[0]
	if n1.DataNIC == "" {
		t.Fatal("the e2e cluster has no data NIC: it must run two nodes")
	}
	a, b := s.spanPods(t, "mv", "span-mv")
	s.checkSpan(t, a, b, nodeLinkMTU(t, n1.NetNS, n1.DataNIC))
	s.deleteSpanPods(t, "mv")
}

// testSpanUplink: a bridge network whose bridge on each node has the data
// NIC as uplink port spans the nodes; when its last pod goes, the bridge
// goes on both nodes and the data NIC is left, released from it.
func (s *suite) testSpanUplink(t *testing.T) {
	n1 := s.cluster.Nodes[0]
	a, b := s.spanPods(t, "up", "span-up")
	for _, n := range s.cluster.Nodes {
		if master := linkMaster(t, n.NetNS, n.DataNIC); master != "pnbr-e2up" {
			t.Fatalf("data NIC of %s has master %q, want the bridge pnbr-e2up", n.Name, master)
		}
	}
	s.checkSpan(t, a, b, nodeLinkMTU(t, n1.NetNS, n1.DataNIC))
	s.deleteSpanPods(t, "up")
	eventually(t, 2*time.Minute, "bridge pnbr-e2up gone and the data NICs released on both nodes", func(context.Context) error {
		for _, n := range s.cluster.Nodes {
			if linkExists(n.NetNS, "pnbr-e2up") {
				return fmt.Errorf("bridge pnbr-e2up still on %s", n.Name)
			}
			if !linkExists(n.NetNS, n.DataNIC) {
				return fmt.Errorf("data NIC %s of %s deleted with the bridge", n.DataNIC, n.Name)
			}
			if master := linkMaster(t, n.NetNS, n.DataNIC); master != "" {
				return fmt.Errorf("data NIC of %s still a port of %q", n.Name, master)
			}
		}
		return nil
	})
}

// testSpanVXLAN: a bridge network with a VXLAN overlay spans the nodes
// over the underlay; each node's VXLAN device floods to the other node;
// a Node object deleted takes its flood entry away on the other node and
// re-created brings it back; the last pod gone takes the VXLAN device and
// the bridge away on both nodes.
func (s *suite) testSpanVXLAN(t *testing.T) {
	a, b := s.spanPods(t, "vx", "span-vx")
	s.checkSpan(t, a, b, spanVXMTU)
	for i, n := range s.cluster.Nodes {
		other := s.cluster.Nodes[1-i]
		dev := vxlanDevice(t, n.NetNS, spanVNI)
		if dev == "" {
			t.Fatalf("no VXLAN device with VNI %d on %s", spanVNI, n.Name)
		}
		if master := linkMaster(t, n.NetNS, dev); master != spanVXBridge {
			t.Fatalf("VXLAN device %s on %s has master %q, want %s", dev, n.Name, master, spanVXBridge)
		}
		if !slices.Contains(floodPeers(t, n.NetNS, dev), other.IP) {
			t.Fatalf("VXLAN device %s on %s does not flood to %s (%s): %v", dev, n.Name, other.Name, other.IP, floodPeers(t, n.NetNS, dev))
		}
	}
	s.nodeLeavesAndComesBack(t, a, b)
	s.deleteSpanPods(t, "vx")
	eventually(t, 2*time.Minute, "VXLAN device and bridge gone on both nodes", func(context.Context) error {
		for _, n := range s.cluster.Nodes {
			if dev := vxlanDevice(t, n.NetNS, spanVNI); dev != "" {
				return fmt.Errorf("VXLAN device %s still on %s", dev, n.Name)
			}
			if linkExists(n.NetNS, spanVXBridge) {
				return fmt.Errorf("bridge %s still on %s", spanVXBridge, n.Name)
			}
		}
		return nil
	})
}

// nodeLeavesAndComesBack deletes node 2's Node object, waits until node
// 1's VXLAN device no longer floods to it, then creates the object again
// as it was (the kubelet keeps updating it by name) and waits until the
// flood entry and traffic from a to b are back.
func (s *suite) nodeLeavesAndComesBack(t *testing.T, a, b corev1.Pod) {
	t.Helper()
	n1, n2 := s.cluster.Nodes[0], s.cluster.Nodes[1]
	dev := vxlanDevice(t, n1.NetNS, spanVNI)
	saved := s.kubectl(t, "", "get", "node", n2.Name, "-o", "json")
	var obj map[string]any
	if err := json.Unmarshal([]byte(saved), &obj); err != nil {
		t.Fatal(err)
	}
	meta := obj["metadata"].(map[string]any)
	for _, k := range []string{"resourceVersion", "uid", "creationTimestamp", "managedFields"} {
		delete(meta, k)
	}
	restore, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	s.kubectl(t, "", "delete", "node", n2.Name, "--wait=true")
	restored := false
	t.Cleanup(func() {
		if !restored {
			s.kubectl(t, string(restore), "create", "-f", "-")
		}
	})
	eventually(t, time.Minute, "node 1 no longer floods to the deleted node 2", func(context.Context) error {
		if slices.Contains(floodPeers(t, n1.NetNS, dev), n2.IP) {
			return fmt.Errorf("flood entry to %s still on %s", n2.IP, dev)
		}
		return nil
	})
	s.kubectl(t, string(restore), "create", "-f", "-")
	restored = true
	eventually(t, time.Minute, "node 1 floods to node 2 again", func(context.Context) error {
		if !slices.Contains(floodPeers(t, n1.NetNS, dev), n2.IP) {
			return fmt.Errorf("no flood entry to %s on %s: %v", n2.IP, dev, floodPeers(t, n1.NetNS, dev))
		}
		return nil
	})
	st, _ := statusOf(b)
	v4, _ := splitFamilies(ipsOf(st, "net1"))
	eventually(t, time.Minute, "traffic across nodes back", func(context.Context) error {
		if out, err := s.exec(a.Name, "ping", "-c", "1", "-W", "2", v4[0]); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
}

// ipCmd runs ip with the node netns's name; reading only.
func ipCmd(netns string, args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"-n", filepath.Base(netns)}, args...)...).CombinedOutput()
	return string(out), err
}

func linkExists(netns, link string) bool {
	_, err := ipCmd(netns, "link", "show", link)
	return err == nil
}

// linkMaster is the bridge a link is a port of, "" for none.
func linkMaster(t *testing.T, netns, link string) string {
	t.Helper()
	out, err := ipCmd(netns, "-o", "link", "show", link)
	if err != nil {
		t.Fatalf("show %s in %s: %v\n%s", link, netns, err, out)
	}
	f := strings.Fields(out)
	for i := range f[:len(f)-1] {
		if f[i] == "master" {
			return f[i+1]
		}
	}
	return ""
}

// vxlanDevice is the name of the VXLAN device with the VNI in a node's
// netns, "" if there is none.
func vxlanDevice(t *testing.T, netns string, vni int) string {
	t.Helper()
	out, err := ipCmd(netns, "-o", "-d", "link", "show", "type", "vxlan")
	if err != nil {
		t.Fatalf("list VXLAN devices in %s: %v\n%s", netns, err, out)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i := range f {
			if i+2 < len(f) && f[i] == "vxlan" && f[i+1] == "id" && f[i+2] == strconv.Itoa(vni) && len(f) > 1 {
				return strings.SplitN(strings.TrimSuffix(f[1], ":"), "@", 2)[0]
			}
		}
	}
	return ""
}

// floodPeers are the destinations of a VXLAN device's all-zeros FDB
// entries: the nodes a broadcast is copied to.
func floodPeers(t *testing.T, netns, dev string) []string {
	t.Helper()
	out, err := exec.Command("bridge", "-n", filepath.Base(netns), "fdb", "show", "dev", dev).CombinedOutput()
	if err != nil {
		t.Fatalf("fdb of %s in %s: %v\n%s", dev, netns, err, out)
	}
	var peers []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "00:00:00:00:00:00" {
			continue
		}
		if i := slices.Index(f, "dst"); i > 0 && i+1 < len(f) {
			peers = append(peers, f[i+1])
		}
	}
	return peers
}
