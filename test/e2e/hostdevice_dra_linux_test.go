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
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/agent/dra"
	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

const (
	hostDeviceDRANS      = "hostdevdra"
	hostDeviceDRAProfile = "e2e-hostdev-dra"
)

// hostDeviceDRAProfileYAML offers the NICs named pndra* through DRA.
var hostDeviceDRAProfileYAML = fmt.Sprintf(`
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: %s}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: hdd}
  networks:
  - name: nicd
    hostDevice: {names: ["pndra*"]}
    ipam: {pools: ["192.168.73.0/24"]}
    dra: {}
`, hostDeviceDRAProfile)

// nicClaim is a ResourceClaim for one NIC of the network, as net1; the
// tenant's CEL selector asks for the NIC named nic.
func nicClaim(name, class, nic string) string {
	return fmt.Sprintf(`
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  devices:
    requests:
    - name: nic
      exactly:
        deviceClassName: %[3]s
        selectors:
        - cel: {expression: 'device.attributes["podnet.io"].nic == "%[4]s"'}
    config:
    - requests: [nic]
      opaque:
        driver: podnet.io
        parameters: {interface: net1}
`, name, hostDeviceDRANS, class, nic)
}

// claimPod is a pod of the namespace that names one claim and no node.
func claimPod(name, claim string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: hostDeviceDRANS, Name: name},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: new(int64),
			ResourceClaims:                []corev1.PodResourceClaim{{Name: "nic", ResourceClaimName: &claim}},
			Containers: []corev1.Container{{Name: "app", Image: "localhost/podnet/busybox:dev", ImagePullPolicy: corev1.PullNever,
				Command:   []string{"sleep", "86400"},
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "nic"}}}}},
		},
	}
}

// testHostDeviceDRA: node 1 has two NICs the profile selects through DRA,
// pndra0 and pndra1 (veth ends, their peers pnwire0 and pnwire1 stay on
// the node); node 2 has none. Node 1's ResourceSlice lists each as a
// device named after it, node 2's lists none. A pod that asks for the
// network by annotation is refused, naming the device class. A claim
// whose selector asks for pndra1 (not the first by name) gets it: the
// scheduler places the pod on node 1, the pod's net1 is pndra1 whole, and
// the device leaves the slice while the pod holds it. A second claim for
// pndra1 leaves its pod Unschedulable; when the first pod goes, pndra1
// comes back to the node and to the slice, the first claim is
// deallocated, and a pod of the second claim gets it.
func (s *suite) testHostDeviceDRA(t *testing.T) {
	ctx := context.Background()
	n1 := filepath.Base(s.cluster.Nodes[0].NetNS)
	for i := range 2 {
		nic, wire := fmt.Sprintf("pndra%d", i), fmt.Sprintf("pnwire%d", i)
		runIP(t, "-n", n1, "link", "add", nic, "type", "veth", "peer", "name", wire)
		t.Cleanup(func() { _ = exec.Command("ip", "-n", n1, "link", "del", wire).Run() })
		runIP(t, "-n", n1, "link", "set", wire, "up")
	}
	mac := linkMAC(t, n1, "pndra1")
	s.tenantWith(t, hostDeviceDRAProfile, hostDeviceDRAProfileYAML, hostDeviceDRANS, "hdd")
	class := mustClass(t, hostDeviceDRAProfile, "nicd")
	s.waitDeviceClasses(t, class)
	s.waitNICDevices(t, "pndra0", "pndra1")

	// Once the webhook knows the profile, a pod that asks for the
	// network by annotation is refused, naming the device class.
	eventually(t, time.Minute, "the annotation refused, naming the device class", func(ctx context.Context) error {
		byAnnotation := claimPod("annotated", "none")
		byAnnotation.Spec.ResourceClaims, byAnnotation.Spec.Containers[0].Resources = nil, corev1.ResourceRequirements{}
		byAnnotation.Annotations = map[string]string{podnetv1.NetworksAnnotation: "nicd"}
		err := s.client.Create(ctx, byAnnotation, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "ask for it with a ResourceClaim of device class \""+class+"\"") {
			return fmt.Errorf("a pod asking for the network by annotation: %v; want a refusal naming the device class", err)
		}
		return nil
	})

	s.apply(t, nicClaim("first", class, "pndra1"))
	if err := s.client.Create(ctx, claimPod("first", "first")); err != nil {
		t.Fatal(err)
	}
	p := s.waitNet1(t, hostDeviceDRANS, "first", true, 3*time.Minute)
	if p.Spec.NodeName != node1 {
		t.Fatalf("pod first runs on %q, want %s, the only node publishing the network's NICs", p.Spec.NodeName, node1)
	}
	if link := s.kubectl(t, "", "-n", hostDeviceDRANS, "exec", "first", "-c", "app", "--", "ip", "-o", "link", "show", "net1"); !strings.Contains(link, mac) {
		t.Fatalf("net1 of pod first is not pndra1 (%s), the NIC its claim was allocated: %s", mac, link)
	}
	if err := exec.Command("ip", "-n", n1, "link", "show", "pndra0").Run(); err != nil {
		t.Fatalf("pndra0, not allocated, left node 1: %v", err)
	}
	s.waitNICDevices(t, "pndra0")

	s.apply(t, nicClaim("second", class, "pndra1"))
	if err := s.client.Create(ctx, claimPod("second", "second")); err != nil {
		t.Fatal(err)
	}
	s.waitUnschedulable(t, hostDeviceDRANS, "second")

	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("claims:\n%s", s.kubectl(t, "", "-n", hostDeviceDRANS, "get", "resourceclaims", "-o", "yaml"))
			t.Logf("pods:\n%s", s.kubectl(t, "", "-n", hostDeviceDRANS, "get", "pods", "-o", "yaml"))
			t.Logf("slices:\n%s", s.kubectl(t, "", "get", "resourceslices", "-o", "yaml"))
			t.Logf("agent:\n%s", s.kubectl(t, "", "-n", "podnet-system", "logs", "-l", "app.kubernetes.io/name=podnet-agent", "--tail=80", "--all-containers"))
		}
	})
	// The first pod goes: pndra1 comes back to the node and to its slice,
	// and the first claim is deallocated. A pod waiting Unschedulable is
	// looked at again by the scheduler only on events of its own claims,
	// pods and slices, or after up to 5 minutes, so the second pod is
	// made again then rather than waited for.
	s.deleteNow(t, hostDeviceDRANS, "second")
	s.deleteNow(t, hostDeviceDRANS, "first")
	s.waitNICDevices(t, "pndra0", "pndra1")
	eventually(t, time.Minute, "the first claim deallocated", func(ctx context.Context) error {
		var c resourceapi.ResourceClaim
		if err := s.client.Get(ctx, client.ObjectKey{Namespace: hostDeviceDRANS, Name: "first"}, &c); err != nil {
			return err
		}
		if c.Status.Allocation != nil {
			return fmt.Errorf("claim first still allocated: %+v", c.Status.Allocation.Devices.Results)
		}
		return nil
	})
	eventually(t, time.Minute, "pod second gone", func(ctx context.Context) error {
		err := s.client.Get(ctx, client.ObjectKey{Namespace: hostDeviceDRANS, Name: "second"}, &corev1.Pod{})
		if err == nil {
			return fmt.Errorf("pod second still there")
		}
		return client.IgnoreNotFound(err)
	})
	if err := s.client.Create(ctx, claimPod("second", "second")); err != nil {
		t.Fatal(err)
	}
	s.waitNet1(t, hostDeviceDRANS, "second", true, 3*time.Minute)
	if link := s.kubectl(t, "", "-n", hostDeviceDRANS, "exec", "second", "-c", "app", "--", "ip", "-o", "link", "show", "net1"); !strings.Contains(link, mac) {
		t.Fatalf("net1 of pod second is not pndra1 (%s): %s", mac, link)
	}
	s.deleteNow(t, hostDeviceDRANS, "second")
	s.waitNICDevices(t, "pndra0", "pndra1")
}

// waitNICDevices waits until node 1 publishes exactly the devices of the
// DRA host device network's NICs named, and node 2 none.
func (s *suite) waitNICDevices(t *testing.T, nics ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, nic := range nics {
		name, ok := dra.HostDeviceName(hostDeviceDRAProfile, "nicd", nic)
		if !ok {
			t.Fatalf("NIC %s has no device name", nic)
		}
		want[name] = true
	}
	eventually(t, 2*time.Minute, fmt.Sprintf("node 1's slice lists the NICs %v", nics), func(ctx context.Context) error {
		per, names, err := s.deviceNamesOf(ctx, hostDeviceDRAProfile, "nicd")
		if err != nil {
			return err
		}
		if per[node2] != 0 || per[node1] != len(want) {
			return fmt.Errorf("devices per node %v (%v)", per, names)
		}
		for _, n := range names {
			if !want[n] {
				return fmt.Errorf("node 1 publishes %v", names)
			}
		}
		return nil
	})
}
