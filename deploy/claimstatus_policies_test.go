package deploy

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/test/testenv"
)

// TestPolicyAgentWritesOnlyItsNodesClaimStatus: the agent of node-a
// writes network data into a ResourceClaim allocated to node-a; it may
// not write into one allocated to node-b, change another driver's entry
// or the allocation, or write at all with a token that names no node.
func TestPolicyAgentWritesOnlyItsNodesClaimStatus(t *testing.T) {
	env := sharedPolicies(t)
	ctx := context.Background()
	admin := env.Client
	grantAgent(t, admin)
	as := func(extra map[string][]string) client.Client {
		return impersonate(t, env, rest.ImpersonationConfig{UserName: agentUser, Groups: []string{"system:serviceaccounts", "system:authenticated"}, Extra: extra})
	}
	agentA := as(map[string][]string{nodeNameExtra: {"node-a"}})
	noNode := as(nil)
	onA, onB := allocatedClaim(t, admin, "on-a", "node-a"), allocatedClaim(t, admin, "on-b", "node-b")
	podnet := map[string]any{"driver": "podnet.io", "pool": "pool", "device": "d0", "networkData": map[string]any{"interfaceName": "net5", "ips": []string{"192.168.1.5/24"}}}
	other := map[string]any{"driver": "gpu.example.com", "pool": "pool", "device": "gpu0", "networkData": map[string]any{"interfaceName": "forged"}}
	write := func(c client.Client, claim *resourceapi.ResourceClaim, devices ...map[string]any) error {
		body, _ := json.Marshal(map[string]any{"status": map[string]any{"devices": devices}})
		return c.Status().Patch(ctx, claim.DeepCopy(), client.RawPatch(types.MergePatchType, body))
	}
	testenv.Eventually(t, 60*time.Second, "policy refusing a claim of node-b", func(ctx context.Context) error {
		return refused(write(agentA, onB, podnet), "own node (node-a")
	})
	if err := write(agentA, onA, podnet); err != nil {
		t.Errorf("agent of node-a writing its claim's network data: %v", err)
	}
	if err := refused(write(agentA, onA, podnet, other), "only the podnet.io entries"); err != nil {
		t.Errorf("agent of node-a writing another driver's entry: %v", err)
	}
	err := agentA.Status().Patch(ctx, onA.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"status":{"reservedFor":null}}`)))
	if err := refused(err, "only the podnet.io entries"); err != nil {
		t.Errorf("agent of node-a dropping the reservations: %v", err)
	}
	if err := refused(write(noNode, onA, podnet), "its token names no node"); err != nil {
		t.Errorf("agent token without a node: %v", err)
	}
}

// allocatedClaim creates a claim in t1 allocated, as the scheduler does,
// to one node, with a device of podnet and one of another driver.
func allocatedClaim(t *testing.T, c client.Client, name, node string) *resourceapi.ResourceClaim {
	t.Helper()
	ctx := context.Background()
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: name},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
			{Name: "net", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "data.p"}},
			{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}},
		}}}}
	if err := c.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	claim.Status.Allocation = &resourceapi.AllocationResult{
		Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "net", Driver: "podnet.io", Pool: "pool", Device: "d0"},
			{Request: "gpu", Driver: "gpu.example.com", Pool: "pool", Device: "gpu0"},
		}},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}},
	}
	claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: "uid-p"}}
	if err := c.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	return claim
}
