package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// overlayAttackerNS never opted in: its pods have no podnet network and
// hold nothing but the runtime's default capabilities.
const overlayAttackerNS = "overlay-attacker"

// buildVXLANSend builds the static sender the attacks run in pods.
func buildVXLANSend(t *testing.T) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "vxlansend")
	cmd := exec.Command("go", "build", "-o", out, "./test/e2e/vxlansend")
	cmd.Dir = testenv.RepoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build vxlansend: %v\n%s", err, b)
	}
	bin, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// fdbHas reports whether a node's VXLAN device has learned mac.
func fdbHas(t *testing.T, netns, dev, mac string) bool {
	t.Helper()
	out, err := exec.Command("bridge", "-n", filepath.Base(netns), "fdb", "show", "dev", dev).CombinedOutput()
	if err != nil {
		t.Fatalf("fdb of %s in %s: %v\n%s", dev, netns, err, out)
	}
	return strings.Contains(string(out), mac)
}

// testOverlayLocked: a pod of a namespace that never opted in sends a
// VXLAN-encapsulated ARP into the span network's VNI by plain UDP, to its
// own node and to the other node: neither node's VXLAN device learns the
// attacker's MAC and the victim pod's neighbour table never holds it,
// while the same packet sent by the peer node itself (the control: the
// packet is good and the checks can see it) is learned. Then Node objects
// claiming the VNI with a loopback InternalIP are never flooded to,
// while one with a usable address is.
func (s *suite) testOverlayLocked(t *testing.T) {
	bin := buildVXLANSend(t)
	a, _ := s.spanPods(t, "ovl", "span-vx")
	t.Cleanup(func() { s.deleteSpanPods(t, "ovl") })
	st, err := statusOf(a)
	if err != nil {
		t.Fatal(err)
	}
	v4, _ := splitFamilies(ipsOf(st, "net1"))
	if len(v4) == 0 {
		t.Fatalf("victim %s has no IPv4 address on net1: %v", a.Name, st)
	}
	victimIP := strings.Split(v4[0], "/")[0]
	n1, n2 := s.cluster.Nodes[0], s.cluster.Nodes[1]
	dev := vxlanDevice(t, n1.NetNS, spanVNI)
	if dev == "" {
		t.Fatalf("no VXLAN device with VNI %d on %s", spanVNI, n1.Name)
	}

	s.kubectl(t, "", "create", "namespace", overlayAttackerNS)
	t.Cleanup(func() { s.kubectl(t, "", "delete", "namespace", overlayAttackerNS, "--wait=false") })
	attackers := map[string]string{"attacker-1": node1, "attacker-2": node2}
	for name, node := range attackers {
		s.apply(t, fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s}
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 0
  containers:
  - name: app
    image: localhost/podnet/busybox:dev
    imagePullPolicy: Never
    command: [sleep, "86400"]
`, name, overlayAttackerNS, node))
	}
	for name := range attackers {
		s.kubectl(t, "", "-n", overlayAttackerNS, "wait", "--for=condition=Ready", "pod/"+name, "--timeout=3m")
		s.kubectl(t, string(bin), "-n", overlayAttackerNS, "exec", "-i", name, "--", "sh", "-c", "cat > /tmp/vxlansend && chmod +x /tmp/vxlansend")
	}
	vni := strconv.Itoa(spanVNI)
	macs := map[string]string{"attacker-1": "02:ba:d0:00:00:01", "attacker-2": "02:ba:d0:00:00:02"}
	for name, mac := range macs {
		s.kubectl(t, "", "-n", overlayAttackerNS, "exec", name, "--", "/tmp/vxlansend", n1.IP, "4789", vni, mac, "192.168.62.250", victimIP)
	}
	// The control, sent after the attacks: node 2 itself, a peer.
	control := "02:ba:d0:00:00:09"
	sendBin := filepath.Join(t.TempDir(), "vxlansend")
	if err := os.WriteFile(sendBin, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ip", "netns", "exec", filepath.Base(n2.NetNS), sendBin, n1.IP, "4789", vni, control, "192.168.62.249", victimIP).CombinedOutput(); err != nil {
		t.Fatalf("control from node 2: %v\n%s", err, out)
	}
	eventually(t, time.Minute, "node 1 learns the peer's frame and the victim its sender", func(context.Context) error {
		if !fdbHas(t, n1.NetNS, dev, control) {
			return fmt.Errorf("%s on %s has not learned %s", dev, n1.Name, control)
		}
		if out, err := s.exec(a.Name, "ip", "neigh", "show"); err != nil || !strings.Contains(out, control) {
			return fmt.Errorf("victim's neighbours lack %s: %v\n%s", control, err, out)
		}
		return nil
	})
	neigh, err := s.exec(a.Name, "ip", "neigh", "show")
	if err != nil {
		t.Fatal(err)
	}
	for name, mac := range macs {
		if fdbHas(t, n1.NetNS, dev, mac) {
			t.Errorf("the VNI took %s's frame (from %s): %s learned %s", name, attackers[name], dev, mac)
		}
		if strings.Contains(neigh, mac) {
			t.Errorf("the victim learned %s's MAC %s:\n%s", name, mac, neigh)
		}
	}

	s.rogueNodesAreNoPeers(t, n1.NetNS, dev)
}

// rogueNodesAreNoPeers creates Node objects claiming the VNI, as a node's
// credentials could: one whose InternalIP is loopback, one with a usable
// address, created after it. Once node 1 floods to the second, it must
// never have flooded to the first.
func (s *suite) rogueNodesAreNoPeers(t *testing.T, netns, dev string) {
	t.Helper()
	// An unused address of the nodes' own subnet: flooding to it stays in
	// the cluster's namespaces.
	n1 := s.cluster.Nodes[0].IP
	usable := n1[:strings.LastIndex(n1, ".")+1] + "250"
	names := []string{"rogue-loopback", "rogue-usable"}
	defer s.kubectl(t, "", append([]string{"delete", "node", "--wait=false", "--ignore-not-found"}, names...)...)
	for _, n := range []struct{ name, ip string }{{names[0], "127.0.0.2"}, {names[1], usable}} {
		s.apply(t, fmt.Sprintf(`
apiVersion: v1
kind: Node
metadata:
  name: %s
  annotations: {%s: "%d"}
`, n.name, v1alpha1.NodeVNIsAnnotation, spanVNI))
		patch := fmt.Sprintf(`{"status":{"addresses":[{"type":"InternalIP","address":%q}]}}`, n.ip)
		s.kubectl(t, "", "patch", "node", n.name, "--subresource=status", "--type=merge", "-p", patch)
	}
	eventually(t, time.Minute, "node 1 floods to the usable rogue node", func(context.Context) error {
		if peers := floodPeers(t, netns, dev); !slices.Contains(peers, usable) {
			return fmt.Errorf("%s floods to %v", dev, peers)
		}
		return nil
	})
	if peers := floodPeers(t, netns, dev); slices.Contains(peers, "127.0.0.2") {
		t.Fatalf("%s floods to the node whose InternalIP is 127.0.0.2: %v", dev, peers)
	}
	// A real node rewriting its InternalIP is the same Node event; the
	// kubelet would rewrite it back, so the rogue object stands for it.
}
