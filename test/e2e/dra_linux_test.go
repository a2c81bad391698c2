package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// The DRA-enabled network of the e2e suite: its own profile, so the
// other scenarios' profile is untouched.
const (
	draProfileName = "e2e-dra"
	draNetwork     = "dranet"
	draPerNode     = 3
)

var draProfile = fmt.Sprintf(`
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: %s}
spec:
  namespaceSelector:
    matchLabels: {tenant: a}
  networks:
  - name: %s
    bridge: {name: pnbr-dra}   # no VLAN: the host kernel here has no bridge vlan_filtering
    mtu: {max: 9000}
    dra: {attachmentsPerNode: %d}
`, draProfileName, draNetwork, draPerNode)

// testDRA: with a DRA-enabled profile network, every node's agent
// publishes its devices in a ResourceSlice of driver podnet.io with the
// network's attributes, and the controller keeps its DeviceClass; a
// Deployment whose ResourceClaimTemplate names that class gets its claim
// allocated by the scheduler on a node that publishes the device, the
// webhook signs the claim's approval (its opaque config asks for MTU
// 1400 and interface dra1), the agent's NodePrepareResources verifies it,
// the pod runs, and the agent writes dra1's network data into the
// claim's status. A tenant may not create or change DeviceClasses.
func (s *suite) testDRA(t *testing.T) {
	s.apply(t, draProfile)
	class, err := podnetv1.DeviceClassName(draProfileName, draNetwork)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "both nodes' ResourceSlices", func(ctx context.Context) error {
		return s.draSlicesPublished(ctx, draPerNode)
	})
	eventually(t, time.Minute, "DeviceClass "+class, func(ctx context.Context) error {
		var dc resourceapi.DeviceClass
		if err := s.client.Get(ctx, client.ObjectKey{Name: class}, &dc); err != nil {
			return err
		}
		if dc.Labels[podnetv1.DeviceClassProfileLabel] != draProfileName {
			return fmt.Errorf("DeviceClass %s labels %v", class, dc.Labels)
		}
		return nil
	})
	for _, verb := range []string{"create", "update", "delete"} {
		out, _ := s.kubectlErr("", "auth", "can-i", verb, "deviceclasses.resource.k8s.io", "--as=system:serviceaccount:"+tenantNS+":viewer")
		if strings.TrimSpace(out) != "no" {
			t.Errorf("a tenant may %s DeviceClasses: %q", verb, out)
		}
	}
	s.apply(t, draDeployment("dra-app", class))
	s.waitReady(t, "dra-app")
	p, err := s.onePod(context.Background(), "dra-app")
	if err != nil {
		t.Fatal(err)
	}
	claim := s.podClaim(t, p.Name)
	res := claim.Status.Allocation.Devices.Results
	if len(res) != 1 || res[0].Driver != podnetv1.DRADriver || res[0].Pool != p.Spec.NodeName {
		t.Fatalf("claim %s allocated %+v, want one %s device of the pod's node %s", claim.Name, res, podnetv1.DRADriver, p.Spec.NodeName)
	}
	// The agent verified the claim's approval, built its interface and
	// wrote its network data into the claim's status (KEP-4817).
	eventually(t, 2*time.Minute, "the claim's network data", func(ctx context.Context) error {
		var c resourceapi.ResourceClaim
		if err := s.client.Get(ctx, client.ObjectKeyFromObject(&claim), &c); err != nil {
			return err
		}
		for _, d := range c.Status.Devices {
			if d.Driver == podnetv1.DRADriver && d.Device == res[0].Device && d.NetworkData != nil && d.NetworkData.InterfaceName == "dra1" && d.NetworkData.HardwareAddress != "" {
				return nil
			}
		}
		return fmt.Errorf("claim %s status.devices %+v, want %s's network data for dra1", c.Name, c.Status.Devices, res[0].Device)
	})
	t.Run("AgentWritesOnlyItsNodesSlices", s.testDRASliceAttack)
	s.kubectl(t, "", "-n", tenantNS, "delete", "deployment", "dra-app")
	eventually(t, 2*time.Minute, "the claim released with its pod", func(ctx context.Context) error {
		var list resourceapi.ResourceClaimList
		if err := s.client.List(ctx, &list, client.InNamespace(tenantNS)); err != nil {
			return err
		}
		if len(list.Items) != 0 {
			return fmt.Errorf("%d ResourceClaims left", len(list.Items))
		}
		return nil
	})
	// Profile changes are published again: fewer attachments, then none.
	s.kubectl(t, "", "patch", "networkprofile", draProfileName, "--type=json",
		"-p", `[{"op":"replace","path":"/spec/networks/0/dra/attachmentsPerNode","value":1}]`)
	eventually(t, 2*time.Minute, "one device per node after the profile's change", func(ctx context.Context) error {
		return s.draSlicesPublished(ctx, 1)
	})
	s.kubectl(t, "", "delete", "networkprofile", draProfileName)
	eventually(t, 2*time.Minute, "no device and no class once the profile is gone", func(ctx context.Context) error {
		var dc resourceapi.DeviceClass
		if err := s.client.Get(ctx, client.ObjectKey{Name: class}, &dc); err == nil {
			return fmt.Errorf("DeviceClass %s still there", class)
		}
		return s.draSlicesPublished(ctx, 0)
	})
}

// testDRASliceAttack: the agent's identity with node drs-n1 in its token
// (as a stolen token of that node's agent) can publish no slice naming
// the other node, nor touch that node's slice.
func (s *suite) testDRASliceAttack(t *testing.T) {
	as := []string{"--as=system:serviceaccount:podnet-system:podnet-agent", "--as-user-extra=authentication.kubernetes.io/node-name=" + node1}
	forged := fmt.Sprintf(`
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: forged-%[1]s}
spec:
  driver: %[2]s
  nodeName: %[1]s
  pool: {name: %[1]s, resourceSliceCount: 1}
  devices: [{name: forged-0}]
`, node2, podnetv1.DRADriver)
	out, err := s.kubectlErr(forged, append([]string{"create", "-f", "-"}, as...)...)
	if err == nil || !strings.Contains(err.Error(), "podnet-agent may change only ResourceSlices of driver podnet.io with spec.nodeName "+node1) {
		t.Errorf("agent of %s publishing a slice of %s: %v %s", node1, node2, err, out)
	}
	var list resourceapi.ResourceSliceList
	if err := s.client.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	for _, sl := range list.Items {
		if sl.Spec.NodeName == nil || *sl.Spec.NodeName != node2 || sl.Spec.Driver != podnetv1.DRADriver {
			continue
		}
		_, err := s.kubectlErr("", append([]string{"delete", "resourceslice", sl.Name}, as...)...)
		if err == nil || !strings.Contains(err.Error(), "spec.nodeName "+node1) {
			t.Errorf("agent of %s deleting slice %s of %s: %v", node1, sl.Name, node2, err)
		}
	}
}

// draSlicesPublished checks that each node publishes want devices of the
// DRA network in its own pool, with the network's attributes.
func (s *suite) draSlicesPublished(ctx context.Context, want int) error {
	var list resourceapi.ResourceSliceList
	if err := s.client.List(ctx, &list); err != nil {
		return err
	}
	perNode := map[string]int{}
	for _, sl := range list.Items {
		if sl.Spec.Driver != podnetv1.DRADriver {
			continue
		}
		node := ""
		if sl.Spec.NodeName != nil {
			node = *sl.Spec.NodeName
		}
		if sl.Spec.Pool.Name != node {
			return fmt.Errorf("slice %s of node %q is in pool %q", sl.Name, node, sl.Spec.Pool.Name)
		}
		for _, d := range sl.Spec.Devices {
			if err := draDeviceAttributes(d); err != nil {
				return fmt.Errorf("slice %s: %w", sl.Name, err)
			}
			perNode[node]++
		}
	}
	for _, n := range []string{node1, node2} {
		if perNode[n] != want {
			return fmt.Errorf("node %s publishes %d devices, want %d (all: %v)", n, perNode[n], want, perNode)
		}
	}
	return nil
}

func draDeviceAttributes(d resourceapi.Device) error {
	str := func(k string) string {
		if v := d.Attributes[resourceapi.QualifiedName(k)].StringValue; v != nil {
			return *v
		}
		return ""
	}
	num := func(k string) int64 {
		if v := d.Attributes[resourceapi.QualifiedName(k)].IntValue; v != nil {
			return *v
		}
		return -1
	}
	got := []any{str(podnetv1.DeviceAttrProfile), str(podnetv1.DeviceAttrNetwork), str(podnetv1.DeviceAttrKind),
		num(podnetv1.DeviceAttrMTUMax), num(podnetv1.DeviceAttrVLANMin), num(podnetv1.DeviceAttrVLANMax)}
	want := []any{draProfileName, draNetwork, string(podnetv1.KindBridge), int64(9000), int64(-1), int64(-1)} // no VLAN policy: no VLAN attributes
	if !slices.Equal(got, want) {
		return fmt.Errorf("device %s attributes %v, want %v", d.Name, got, want)
	}
	return nil
}

// podClaim is the allocated ResourceClaim reserved for pod.
func (s *suite) podClaim(t *testing.T, pod string) resourceapi.ResourceClaim {
	t.Helper()
	var found resourceapi.ResourceClaim
	eventually(t, time.Minute, "the pod's allocated claim", func(ctx context.Context) error {
		var list resourceapi.ResourceClaimList
		if err := s.client.List(ctx, &list, client.InNamespace(tenantNS)); err != nil {
			return err
		}
		for _, c := range list.Items {
			for _, r := range c.Status.ReservedFor {
				if r.Resource == "pods" && r.Name == pod && c.Status.Allocation != nil {
					found = c
					return nil
				}
			}
		}
		return fmt.Errorf("no allocated claim reserved for pod %s among %d", pod, len(list.Items))
	})
	return found
}

// draDeployment is a tenant Deployment whose pod claims one device of
// class through a ResourceClaimTemplate; no podnet annotation, and no
// node chosen: the scheduler places it where a device is free.
func draDeployment(name, class string) string {
	return fmt.Sprintf(`
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  spec:
    devices:
      requests:
      - name: net
        exactly: {deviceClassName: %[3]s}
      config:
      - requests: [net]
        opaque:
          driver: podnet.io
          parameters: {interface: dra1, mtu: 1400}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      terminationGracePeriodSeconds: 1
      resourceClaims:
      - {name: net, resourceClaimTemplateName: %[1]s}
      containers:
      - name: app
        image: localhost/podnet/busybox:dev
        imagePullPolicy: Never
        command: ["sleep", "86400"]
        securityContext: {capabilities: {drop: [NET_RAW]}}
        resources:
          claims:
          - {name: net}
`, name, tenantNS, class)
}
