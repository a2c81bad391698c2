package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/agent/dra"
	"podnet.io/podnet/agent/dra/dratest"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// TestIntegrationClaimNetworkData: against a real API server, a pod
// whose only networks come from a prepared ResourceClaim is attached, and
// the claim's status carries each podnet device's network data (KEP-4817)
// next to another driver's entry, which the agent's apply leaves alone.
func TestIntegrationClaimNetworkData(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	c := env.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "p"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "app:1",
			SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}}}}}}}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "nets"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
			{Name: "a", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "data.p"}},
			{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}},
		}}}}
	if err := c.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	// What the scheduler and the kubelet write: the allocation and the
	// reservation for the pod; then another driver's network data.
	claim.Status.Allocation = dratest.Claim("nets", "p", "a").Status.Allocation
	claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: pod.UID}}
	if err := c.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	other, _ := json.Marshal(map[string]any{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
		"metadata": map[string]any{"name": "nets", "namespace": "tenant"},
		"status": map[string]any{"devices": []map[string]any{{"driver": "gpu.example.com", "pool": node, "device": "gpu0",
			"networkData": map[string]any{"interfaceName": "gpu0"}}}}})
	if err := c.Status().Patch(ctx, claim, client.RawPatch(types.ApplyPatchType, other), client.FieldOwner("gpu-driver")); err != nil {
		t.Fatal(err)
	}

	h := newHarness(t)
	h.r.Client = c
	h.sb.netns[string(pod.UID)] = "/var/run/netns/cni-p"
	claims := &dra.ClaimNetworks{Verify: func(*resourceapi.ResourceClaim) (*v1alpha1.Approval, error) { return dratest.Approval("net5"), nil }}
	if err := c.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
		t.Fatal(err)
	}
	h.r.Claims = claims
	if err := claims.Prepare(claim); err != nil {
		t.Fatal(err)
	}
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the claim's network data", func(ctx context.Context) error {
		var got resourceapi.ResourceClaim
		if err := c.Get(ctx, client.ObjectKeyFromObject(claim), &got); err != nil {
			return err
		}
		byDevice := map[string]resourceapi.AllocatedDeviceStatus{}
		for _, d := range got.Status.Devices {
			byDevice[d.Driver+"/"+d.Device] = d
		}
		mine, theirs := byDevice[v1alpha1.DRADriver+"/d0"], byDevice["gpu.example.com/gpu0"]
		if len(got.Status.Devices) != 2 || mine.NetworkData == nil || mine.NetworkData.InterfaceName != "net5" ||
			mine.NetworkData.HardwareAddress != "02:00:00:00:00:01" || theirs.NetworkData == nil || theirs.NetworkData.InterfaceName != "gpu0" {
			return fmt.Errorf("status.devices = %+v, want podnet's d0 as net5 and the other driver's gpu0", got.Status.Devices)
		}
		return nil
	})
	var p corev1.Pod
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
		t.Fatal(err)
	}
	if cond := condition(t, &p); cond.Status != corev1.ConditionTrue {
		t.Errorf("condition %+v, want the claim's network attached", cond)
	}
}
