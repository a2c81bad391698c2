package kubectlpodnet

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// TestExplainClaims: a pod asking only through ResourceClaims is
// explained by its claims: the first claim that cannot bring its
// networks is the reason, and an attached claim shows its network data.
func TestExplainClaims(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	claim := func(approved bool, allocated bool) *resourceapi.ResourceClaim {
		c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "nets", Annotations: map[string]string{}}}
		c.Spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: v1alpha1.DRADriver}}}}
		if approved {
			c.Annotations[v1alpha1.ApprovedAnnotation] = `{"namespace":"t1","interfaces":[{"interface":"net5","network":"data","kind":"bridge"}]}`
		}
		if allocated {
			c.Status.Allocation = &resourceapi.AllocationResult{}
			c.Status.Devices = []resourceapi.AllocatedDeviceStatus{
				{Driver: v1alpha1.DRADriver, Pool: "n1", Device: "d0", NetworkData: &resourceapi.NetworkDeviceData{InterfaceName: "net5", IPs: []string{"192.168.1.5/24"}}},
				{Driver: "gpu.example.com", Pool: "n1", Device: "gpu0"},
			}
		}
		return c
	}
	cases := []struct {
		name   string
		labels map[string]string
		claim  *resourceapi.ResourceClaim
		reason string
	}{
		{"namespace not opted in", nil, claim(false, false), "is not opted in"},
		{"no approval", map[string]string{v1alpha1.EnabledLabel: "true"}, claim(false, false), "carries no approval"},
		{"not allocated", map[string]string{v1alpha1.EnabledLabel: "true"}, claim(true, false), "is not allocated yet"},
		{"allocated, no sandbox yet", map[string]string{v1alpha1.EnabledLabel: "true"}, claim(true, true), "sandbox is not created yet"},
	}
	for _, c := range cases {
		e := explainPod(PodFacts{Pod: pod, NamespaceLabels: c.labels, Claims: []*resourceapi.ResourceClaim{c.claim}})
		if !strings.Contains(e.Reason, c.reason) {
			t.Errorf("%s: reason %q, want it to say %q", c.name, e.Reason, c.reason)
		}
	}
	var b bytes.Buffer
	e := explainPod(PodFacts{Pod: pod, NamespaceLabels: map[string]string{v1alpha1.EnabledLabel: "true"}, Claims: []*resourceapi.ResourceClaim{claim(true, true)}})
	if err := writeExplain(&b, e); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "Claim:      nets (allocated)") || !strings.Contains(out, "n1/d0") || !strings.Contains(out, "192.168.1.5/24") || strings.Contains(out, "gpu0") {
		t.Errorf("output:\n%s\nwant the claim with podnet's device d0 and its address, not the other driver's", out)
	}
}

// TestIsPodnetClaim: only claims that ask podnet's driver count.
func TestIsPodnetClaim(t *testing.T) {
	gpu := &resourceapi.ResourceClaim{Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{{Driver: "gpu.example.com"}}}}}}
	if isPodnetClaim(gpu) {
		t.Error("another driver's claim counts as podnet's")
	}
	gpu.Status.Allocation.Devices.Results = append(gpu.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{Driver: v1alpha1.DRADriver})
	if !isPodnetClaim(gpu) {
		t.Error("a claim with a podnet device does not count")
	}
}
