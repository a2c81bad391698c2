package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/hack/localcluster"
)

// spanProfile grants tenant-a the networks that span the two nodes. The
// macvlan one sits on each node's data NIC, which the local cluster joins
// to the other node's as a switch port would.
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
    macvlan: {master: %[1]s, mode: bridge}
    ipam:
      pools: ["192.168.60.0/24", "fd00:60::/64"]
`, localcluster.DataNIC)

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
