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
	"podnet.io/podnet/pkg/carry"
)

const hostDeviceNS = "hostdev"

// hostDeviceProfile offers the NICs of the nodes named pnhd* whole.
const hostDeviceProfile = `
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: e2e-hostdev}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: hd}
  networks:
  - name: nic
    hostDevice: {names: ["pnhd*"]}
    ipam: {pools: ["192.168.72.0/24"]}
  - name: vfs
    hostDevice:
      names: ["pnpf*"]
      vf: {vlan: {allowed: ["300-309"]}}
`

// testHostDevice: node 1 has one NIC the profile selects, pnhd0 (a veth
// end whose peer, pnhd0w, stays on the node as the wire, with
// 192.168.72.254; pnhd0w matches the pattern too, but carries an address).
// Node 1 is labelled as having a free NIC of the network, node 2 is not.
// A pod gets pnhd0 whole as net1, with its MAC and its MTU 9000, and
// reaches the wire through it; the NIC is gone from the node and so is the
// label. A pod the scheduler places waits Pending for a node with a free
// NIC; a pod bound to node 1 by name waits with NoFreeHostDevice, and gets
// the NIC once the first pod goes; the scheduled one gets it after that.
// When the last goes, the NIC is back on the node under its name, with its
// MTU and without podnet's marks. When the admin narrows the selector
// under a running pod, the pod loses its NIC to the node (GrantRevoked).
// A pod that names a NIC itself (deviceID) is refused, and so is one that
// asks for a VF VLAN outside the profile's.
func (s *suite) testHostDevice(t *testing.T) {
	ctx := context.Background()
	explain := strings.Join(strings.Fields(s.kubectl(t, "", "explain", "networkprofiles.spec.networks.hostDevice")), " ")
	if !strings.Contains(explain, "moves one of the node's NICs, whole, into the pod") {
		t.Errorf("kubectl explain does not teach hostDevice:\n%s", explain)
	}
	n1 := filepath.Base(s.cluster.Nodes[0].NetNS)
	runIP(t, "-n", n1, "link", "add", "pnhd0", "mtu", "9000", "type", "veth", "peer", "name", "pnhd0w", "mtu", "9000")
	t.Cleanup(func() { _ = exec.Command("ip", "-n", n1, "link", "del", "pnhd0w").Run() })
	runIP(t, "-n", n1, "addr", "add", "192.168.72.254/24", "dev", "pnhd0w")
	runIP(t, "-n", n1, "link", "set", "pnhd0w", "up")
	mac := linkMAC(t, n1, "pnhd0")
	s.tenantWith(t, "e2e-hostdev", hostDeviceProfile, hostDeviceNS, "hd")
	label := carry.Needs(&podnetv1.Network{HostDevice: &podnetv1.HostDeviceNetwork{Names: []string{"pnhd*"}}})[0].Key()
	s.waitNodeLabels(t, node1, map[string]bool{label: true})
	s.waitNodeLabels(t, node2, map[string]bool{label: false})
	s.waitWebhookOffers(t, hostDeviceNS, "nic", "192.168.72.0/24")

	nic := map[string]string{podnetv1.NetworksAnnotation: "nic"}
	if err := s.client.Create(ctx, attackPod("first", hostDeviceNS, nic)); err != nil {
		t.Fatal(err)
	}
	s.waitNet1(t, hostDeviceNS, "first", true, 3*time.Minute)
	out := s.kubectl(t, "", "-n", hostDeviceNS, "exec", "first", "-c", "app", "--", "ip", "-o", "addr", "show", "net1")
	link := s.kubectl(t, "", "-n", hostDeviceNS, "exec", "first", "-c", "app", "--", "ip", "-o", "link", "show", "net1")
	if !strings.Contains(link, mac) || !strings.Contains(link, "mtu 9000") || !strings.Contains(out, "192.168.72.") {
		t.Fatalf("net1 of the first pod is not node 1's pnhd0 (%s, mtu 9000) with an address:\n%s\n%s", mac, link, out)
	}
	if err := exec.Command("ip", "-n", n1, "link", "show", "pnhd0").Run(); err == nil {
		t.Fatal("pnhd0 is still on node 1 while the pod has it")
	}
	addr := strings.Split(strings.Fields(out[strings.Index(out, "inet "):])[1], "/")[0]
	eventually(t, 30*time.Second, "the wire reaches the pod through its NIC", func(context.Context) error {
		if out, err := exec.Command("ip", "netns", "exec", n1, "busybox", "ping", "-c", "1", "-W", "1", addr).CombinedOutput(); err != nil {
			return fmt.Errorf("ping %s from pnhd0w: %v: %s", addr, err, out)
		}
		return nil
	})
	s.waitNodeLabels(t, node1, map[string]bool{label: false})

	// One pod the scheduler places, one bound to node 1 by name.
	if err := s.client.Create(ctx, attackPod("placed", hostDeviceNS, nic)); err != nil {
		t.Fatal(err)
	}
	bound := attackPod("bound", hostDeviceNS, nic)
	bound.Spec.NodeSelector, bound.Spec.NodeName = nil, node1
	if err := s.client.Create(ctx, bound); err != nil {
		t.Fatal(err)
	}
	s.waitCondition(t, hostDeviceNS, "bound", podnetv1.ReasonNoFreeHostDevice)
	s.waitEventNaming(t, hostDeviceNS, "bound", podnetv1.ReasonNoFreeHostDevice, "pnhd0w (carries addresses)")
	if p := s.getPod(t, hostDeviceNS, "bound"); appStarted(p) {
		t.Fatalf("the bound pod started its app without its NIC: %+v", p.Status.ContainerStatuses)
	}
	s.waitUnschedulable(t, hostDeviceNS, "placed")

	// The first pod goes: its NIC comes back and the bound pod takes it.
	s.deleteNow(t, hostDeviceNS, "first")
	s.waitNet1(t, hostDeviceNS, "bound", true, 3*time.Minute)
	if link := s.kubectl(t, "", "-n", hostDeviceNS, "exec", "bound", "-c", "app", "--", "ip", "-o", "link", "show", "net1"); !strings.Contains(link, mac) {
		t.Fatalf("the bound pod's net1 is not pnhd0 (%s): %s", mac, link)
	}
	if c := networksReady(s.getPod(t, hostDeviceNS, "bound")); c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("the bound pod once the NIC was free: condition %+v", c)
	}
	// Then the bound pod goes, and the scheduler places the other one.
	s.deleteNow(t, hostDeviceNS, "bound")
	s.waitNet1(t, hostDeviceNS, "placed", true, 3*time.Minute)
	if p := s.getPod(t, hostDeviceNS, "placed"); p.Spec.NodeName != node1 {
		t.Fatalf("the placed pod runs on %q, want %s", p.Spec.NodeName, node1)
	}
	// The last goes with nobody waiting: the NIC is on the node again,
	// under its name, with its MTU, without podnet's marks.
	s.deleteNow(t, hostDeviceNS, "placed")
	eventually(t, 2*time.Minute, "pnhd0 back on node 1 as it was", func(context.Context) error {
		out, err := exec.Command("ip", "-n", n1, "-d", "link", "show", "pnhd0").CombinedOutput()
		switch {
		case err != nil:
			return fmt.Errorf("pnhd0 on node 1: %v: %s", err, out)
		case !strings.Contains(string(out), "mtu 9000") || strings.Contains(string(out), "podnet") || !strings.Contains(string(out), mac):
			return fmt.Errorf("pnhd0 on node 1 is not as it was: %s", out)
		}
		return nil
	})
	s.waitNodeLabels(t, node1, map[string]bool{label: true})

	// The admin narrows the selector under a running pod: the pod loses
	// the NIC it holds, which goes back to the node.
	if err := s.client.Create(ctx, attackPod("narrowed", hostDeviceNS, nic)); err != nil {
		t.Fatal(err)
	}
	s.waitNet1(t, hostDeviceNS, "narrowed", true, 3*time.Minute)
	s.apply(t, strings.Replace(hostDeviceProfile, `names: ["pnhd*"]`, `names: ["pnhdx*"]`, 1))
	s.waitEventNaming(t, hostDeviceNS, "narrowed", podnetv1.ReasonGrantRevoked, "host devices names pnhd* is now names pnhdx*")
	s.waitNet1(t, hostDeviceNS, "narrowed", false, 2*time.Minute)
	eventually(t, time.Minute, "pnhd0 back on node 1 after the revocation", func(context.Context) error {
		if out, err := exec.Command("ip", "-n", n1, "link", "show", "pnhd0").CombinedOutput(); err != nil {
			return fmt.Errorf("pnhd0 on node 1: %v: %s", err, out)
		}
		return nil
	})

	err := s.client.Create(ctx, attackPod("named", hostDeviceNS, map[string]string{podnetv1.NetworksAnnotation: `[{"name": "nic", "deviceID": "pnhd0"}]`}))
	if err == nil || !strings.Contains(err.Error(), "deviceID") || !strings.Contains(err.Error(), "picks a free NIC") {
		t.Fatalf("a pod naming its NIC: %v; want a refusal naming deviceID", err)
	}
	// A VF's VLAN is set on its PF from the approval: one outside the
	// profile's is refused before any node sees the pod.
	err = s.client.Create(ctx, attackPod("vlan", hostDeviceNS, map[string]string{podnetv1.NetworksAnnotation: `[{"name": "vfs", "vlan": 400}]`}))
	if err == nil || !strings.Contains(err.Error(), "vlan") || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "300-309") {
		t.Fatalf("a pod asking for VF VLAN 400: %v; want a refusal naming the VLAN and the allowed 300-309", err)
	}
}

// deleteNow deletes a pod without a grace period.
func (s *suite) deleteNow(t *testing.T, ns, name string) {
	t.Helper()
	if err := s.client.Delete(context.Background(), s.getPod(t, ns, name), client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
}

// waitUnschedulable waits until the scheduler says it found no node for
// the pod.
func (s *suite) waitUnschedulable(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("pod %s/%s unschedulable", ns, name), func(context.Context) error {
		p := s.getPod(t, ns, name)
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return nil
			}
		}
		return fmt.Errorf("node %q, conditions %+v", p.Spec.NodeName, p.Status.Conditions)
	})
}
