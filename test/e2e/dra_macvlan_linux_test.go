package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// The DRA profile with two kinds: a bridge every node carries and a
// macvlan network whose master NIC only node 1 has.
const (
	drmProfile = "e2e-drm"
	drmBridge  = "drbr"
	drmMacvlan = "drmv"
	drmNIC     = "drm0"
)

var drmProfileYAML = fmt.Sprintf(`
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: %s}
spec:
  namespaceSelector:
    matchLabels: {tenant: a}
  maxInterfaces: 4
  networks:
  - name: %s
    bridge: {name: pnbr-drm}
    mtu: {max: 9000}
    ipam: {pools: ["192.168.80.0/24"]}
    dra: {}
  - name: %s
    macvlan: {master: %s, mode: bridge}
    ipam: {pools: ["192.168.81.0/24"]}
    dra: {}
`, drmProfile, drmBridge, drmMacvlan, drmNIC)

// drmDeployment is a tenant Deployment whose pod names two claim
// templates: "both" asks for the bridge (dra1, MTU 1400) and the macvlan
// network (dra2) in two requests, "extra" for the bridge again (dra3). It
// names no node: only node 1 publishes macvlan devices.
func drmDeployment(bridgeClass, macvlanClass string) string {
	return fmt.Sprintf(`
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: drm-both, namespace: %[1]s}
spec:
  spec:
    devices:
      requests:
      - name: br
        exactly: {deviceClassName: %[2]s}
      - name: mv
        exactly: {deviceClassName: %[3]s}
      config:
      - requests: [br]
        opaque:
          driver: podnet.io
          parameters: {interface: dra1, mtu: 1400}
      - requests: [mv]
        opaque:
          driver: podnet.io
          parameters: {interface: dra2}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: drm-extra, namespace: %[1]s}
spec:
  spec:
    devices:
      requests:
      - name: br
        exactly: {deviceClassName: %[2]s}
      config:
      - requests: [br]
        opaque:
          driver: podnet.io
          parameters: {interface: dra3}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: drm-app, namespace: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: drm-app}}
  template:
    metadata:
      labels: {app: drm-app}
    spec:
      terminationGracePeriodSeconds: 1
      resourceClaims:
      - {name: both, resourceClaimTemplateName: drm-both}
      - {name: extra, resourceClaimTemplateName: drm-extra}
      containers:
      - name: app
        image: localhost/podnet/busybox:dev
        imagePullPolicy: Never
        command: ["sleep", "86400"]
        securityContext: {capabilities: {drop: [NET_RAW]}}
        resources:
          claims:
          - {name: both}
          - {name: extra}
`, tenantNS, bridgeClass, macvlanClass)
}

// testDRABridgeAndMacvlan: one pod of a Deployment names two claim
// templates, one with a bridge and a macvlan request, one with a bridge
// request. The macvlan network's master NIC exists on node 1 only, so
// only node 1's agent publishes its devices and the scheduler places the
// pod there; the pod gets all three interfaces and each claim's
// status.devices carries their network data. Then the admin takes the
// macvlan network out of the profile: its interface leaves the running
// pod, which says so (RevocationDetaches).
func (s *suite) testDRABridgeAndMacvlan(t *testing.T) {
	ns1 := filepath.Base(s.cluster.Nodes[0].NetNS)
	runIP(t, "-n", ns1, "link", "add", drmNIC, "type", "veth", "peer", "name", drmNIC+"p")
	t.Cleanup(func() { _ = exec.Command("ip", "-n", ns1, "link", "del", drmNIC).Run() })
	runIP(t, "-n", ns1, "link", "set", drmNIC, "up")
	runIP(t, "-n", ns1, "link", "set", drmNIC+"p", "up")
	s.apply(t, drmProfileYAML)
	t.Cleanup(func() {
		s.kubectl(t, "", "-n", tenantNS, "delete", "deployment", "drm-app", "--ignore-not-found")
		s.kubectl(t, "", "-n", tenantNS, "delete", "resourceclaimtemplate", "drm-both", "drm-extra", "--ignore-not-found")
		s.kubectl(t, "", "delete", "networkprofile", drmProfile, "--ignore-not-found")
	})
	brClass, mvClass := mustClass(t, drmProfile, drmBridge), mustClass(t, drmProfile, drmMacvlan)
	eventually(t, 2*time.Minute, "macvlan devices on node 1 only, bridge devices on both", func(ctx context.Context) error {
		mv, err := s.devicesOf(ctx, drmProfile, drmMacvlan)
		if err != nil {
			return err
		}
		br, err := s.devicesOf(ctx, drmProfile, drmBridge)
		if err != nil {
			return err
		}
		if mv[node1] == 0 || mv[node2] != 0 || br[node1] == 0 || br[node2] == 0 {
			return fmt.Errorf("macvlan devices per node %v, bridge devices per node %v", mv, br)
		}
		return nil
	})
	s.waitDeviceClasses(t, brClass, mvClass)
	s.waitWebhookOffers(t, tenantNS, drmBridge, "192.168.80.0/24")
	s.waitWebhookOffers(t, tenantNS, drmMacvlan, "192.168.81.0/24")

	s.apply(t, drmDeployment(brClass, mvClass))
	s.waitReady(t, "drm-app")
	p := s.onlyPod(t, "drm-app")
	if p.Spec.NodeName != node1 {
		t.Fatalf("pod %s on %s, want %s: the only node publishing %s devices", p.Name, p.Spec.NodeName, node1, drmMacvlan)
	}
	links := s.podLinks(t, p.Name)
	for _, want := range []string{"dra1", "dra2", "dra3"} {
		if _, ok := links[want]; !ok {
			t.Errorf("pod %s links %v lack %s", p.Name, links, want)
		}
	}
	if mtu := s.podFile(t, tenantNS, p.Name, "/sys/class/net/dra1/mtu"); mtu != "1400" {
		t.Errorf("dra1 mtu %s, want the 1400 its claim asked for", mtu)
	}
	both := s.claimOfPod(t, p.Name, "both")
	data := s.waitClaimNetworkData(t, both, "dra1", "dra2")
	s.checkNetworkData(t, p.Name, data)
	extra := s.claimOfPod(t, p.Name, "extra")
	s.checkNetworkData(t, p.Name, s.waitClaimNetworkData(t, extra, "dra3"))
	t.Logf("claim %s status:\n%s", both.Name, s.kubectl(t, "", "-n", tenantNS, "get", "resourceclaim", both.Name, "-o", "jsonpath={.status.devices}"))

	t.Run("RevocationDetaches", func(t *testing.T) { s.testDRARevocation(t, p, both) })
}

// testDRARevocation: the admin drops the macvlan network from the
// profile under the running pod. Its interface dra2 leaves the pod, the
// pod's condition and an Event say GrantRevoked naming it, the claim's
// status no longer lists its device, and dra1 and dra3 stay.
func (s *suite) testDRARevocation(t *testing.T, p corev1.Pod, both resourceapi.ResourceClaim) {
	s.kubectl(t, "", "patch", "networkprofile", drmProfile, "--type=json",
		"-p", `[{"op":"test","path":"/spec/networks/1/name","value":"`+drmMacvlan+`"},{"op":"remove","path":"/spec/networks/1"}]`)
	start := time.Now()
	eventually(t, 2*time.Minute, "dra2 gone from the pod", func(context.Context) error {
		if l := s.podLinks(t, p.Name); l["dra2"].MAC != "" {
			return fmt.Errorf("links %v", l)
		}
		return nil
	})
	// Logged, not asserted: a pod whose networks come only through
	// claims carries no approval annotation of its own, so the profile
	// watch may not wake it and the agent's resync does.
	t.Logf("macvlan network dropped from the profile: dra2 detached after %v", time.Since(start).Round(time.Millisecond))
	why := fmt.Sprintf(`dra2 (network %q): profile %q no longer offers network %q`, drmMacvlan, drmProfile, drmMacvlan)
	s.waitNarrowCondition(t, tenantNS, p.Name, corev1.ConditionFalse, podnetv1.ReasonGrantRevoked, why)
	s.waitEventNaming(t, tenantNS, p.Name, podnetv1.ReasonGrantRevoked, why)
	if l := s.podLinks(t, p.Name); l["dra1"].MAC == "" || l["dra3"].MAC == "" {
		t.Errorf("links %v after dra2's revocation, want dra1 and dra3 kept", l)
	}
	eventually(t, time.Minute, "the claim's status without the macvlan device", func(ctx context.Context) error {
		var c resourceapi.ResourceClaim
		if err := s.client.Get(ctx, client.ObjectKeyFromObject(&both), &c); err != nil {
			return err
		}
		var names []string
		for _, d := range c.Status.Devices {
			if d.NetworkData != nil {
				names = append(names, d.NetworkData.InterfaceName)
			}
		}
		if !slices.Equal(names, []string{"dra1"}) {
			return fmt.Errorf("claim %s status.devices name %v, want dra1 alone", c.Name, names)
		}
		return nil
	})
	s.stillRunning(t, &p)
}

func mustClass(t *testing.T, profile, network string) string {
	t.Helper()
	c, err := podnetv1.DeviceClassName(profile, network)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// devicesOf counts the published podnet devices of one profile network
// per node.
func (s *suite) devicesOf(ctx context.Context, profile, network string) (map[string]int, error) {
	out, _, err := s.deviceNamesOf(ctx, profile, network)
	return out, err
}

// deviceNamesOf is devicesOf with the devices' names.
func (s *suite) deviceNamesOf(ctx context.Context, profile, network string) (map[string]int, []string, error) {
	var list resourceapi.ResourceSliceList
	if err := s.client.List(ctx, &list); err != nil {
		return nil, nil, err
	}
	out := map[string]int{}
	var names []string
	for _, sl := range list.Items {
		if sl.Spec.Driver != podnetv1.DRADriver || sl.Spec.NodeName == nil {
			continue
		}
		for _, d := range sl.Spec.Devices {
			p, n := d.Attributes[podnetv1.DeviceAttrProfile].StringValue, d.Attributes[podnetv1.DeviceAttrNetwork].StringValue
			if p != nil && n != nil && *p == profile && *n == network {
				out[*sl.Spec.NodeName]++
				names = append(names, d.Name)
			}
		}
	}
	return out, names, nil
}

// waitDeviceClasses waits until the controller keeps every class.
func (s *suite) waitDeviceClasses(t *testing.T, classes ...string) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("DeviceClasses %v", classes), func(ctx context.Context) error {
		for _, c := range classes {
			if err := s.client.Get(ctx, client.ObjectKey{Name: c}, &resourceapi.DeviceClass{}); err != nil {
				return err
			}
		}
		return nil
	})
}

// claimOfPod is the allocated claim the pod's entry (spec.resourceClaims
// name) made from its template, as the pod's status names it.
func (s *suite) claimOfPod(t *testing.T, pod, entry string) resourceapi.ResourceClaim {
	t.Helper()
	var c resourceapi.ResourceClaim
	eventually(t, time.Minute, fmt.Sprintf("pod %s's claim %s", pod, entry), func(ctx context.Context) error {
		p := s.getPod(t, tenantNS, pod)
		for _, st := range p.Status.ResourceClaimStatuses {
			if st.Name == entry && st.ResourceClaimName != nil {
				return s.client.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: *st.ResourceClaimName}, &c)
			}
		}
		return fmt.Errorf("pod %s: resourceClaimStatuses %+v", pod, p.Status.ResourceClaimStatuses)
	})
	return c
}

// waitClaimNetworkData waits until the claim's status.devices carries,
// for each of its podnet devices, network data with one of the
// interfaces, at least one address and a MAC, and returns it by
// interface.
func (s *suite) waitClaimNetworkData(t *testing.T, claim resourceapi.ResourceClaim, ifaces ...string) map[string]resourceapi.NetworkDeviceData {
	t.Helper()
	got := map[string]resourceapi.NetworkDeviceData{}
	eventually(t, 2*time.Minute, fmt.Sprintf("claim %s's network data for %v", claim.Name, ifaces), func(ctx context.Context) error {
		var c resourceapi.ResourceClaim
		if err := s.client.Get(ctx, client.ObjectKeyFromObject(&claim), &c); err != nil {
			return err
		}
		if c.Status.Allocation == nil || len(c.Status.Allocation.Devices.Results) != len(ifaces) {
			return fmt.Errorf("claim %s allocation %+v, want %d devices", c.Name, c.Status.Allocation, len(ifaces))
		}
		clear(got)
		for _, r := range c.Status.Allocation.Devices.Results {
			for _, d := range c.Status.Devices {
				if d.Driver == r.Driver && d.Pool == r.Pool && d.Device == r.Device && d.NetworkData != nil &&
					len(d.NetworkData.IPs) > 0 && d.NetworkData.HardwareAddress != "" {
					got[d.NetworkData.InterfaceName] = *d.NetworkData
				}
			}
		}
		for _, i := range ifaces {
			if _, ok := got[i]; !ok {
				return fmt.Errorf("claim %s status.devices %+v: no network data for %s", c.Name, c.Status.Devices, i)
			}
		}
		return nil
	})
	return got
}

// checkNetworkData checks the claim's network data against the pod's
// own interfaces: each address and the MAC are on that interface.
func (s *suite) checkNetworkData(t *testing.T, pod string, data map[string]resourceapi.NetworkDeviceData) {
	t.Helper()
	links := s.podLinks(t, pod)
	for iface, d := range data {
		l, ok := links[iface]
		if !ok {
			t.Errorf("pod %s has no %s: %v", pod, iface, links)
			continue
		}
		want := slices.Sorted(slices.Values(d.IPs))
		if l.MAC != d.HardwareAddress || !slices.Equal(l.Addrs, want) {
			t.Errorf("pod %s: %s has MAC %s and addresses %v, its claim's status says %s and %v", pod, iface, l.MAC, l.Addrs, d.HardwareAddress, want)
		}
	}
}
