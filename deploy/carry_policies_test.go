package deploy

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/carry"
	"podnet.io/podnet/test/testenv"
)

// TestPolicyAgentWritesOnlyItsOwnCarryLabels: the agent of node-a may
// add and remove carry.podnet.io/ labels of node-a; it may not write them
// on node-b, write any other label of node-a, or give a carry label
// another value or a name pkg/carry does not make.
func TestPolicyAgentWritesOnlyItsOwnCarryLabels(t *testing.T) {
	env := sharedPolicies(t)
	ctx := context.Background()
	admin := env.Client
	grantAgent(t, admin)
	agentA := impersonate(t, env, rest.ImpersonationConfig{UserName: agentUser, Groups: []string{"system:serviceaccounts", "system:authenticated"},
		Extra: map[string][]string{nodeNameExtra: {"node-a"}}})
	for _, n := range []string{"node-a", "node-b"} {
		if err := admin.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"zone": "a"}}}); err != nil {
			t.Fatal(err)
		}
	}
	const nic = "carry.podnet.io/nic.data0"
	// The API server loads each policy asynchronously: wait until both
	// that judge these Node writes (podnet-agent-node-vnis, then
	// podnet-agent-node-carry) refuse dry-run probes of their own.
	testenv.Eventually(t, 60*time.Second, "node policy refusing another label", func(ctx context.Context) error {
		return refused(patchNode(ctx, agentA, "node-a", `{"metadata":{"labels":{"zone":"b"}}}`, client.DryRunAll), "carry.podnet.io/ labels of its Node")
	})
	testenv.Eventually(t, 60*time.Second, "carry policy refusing node-b", func(ctx context.Context) error {
		return refused(patchNode(ctx, agentA, "node-b", `{"metadata":{"labels":{"`+nic+`":"true"}}}`, client.DryRunAll), "own Node")
	})
	testenv.Eventually(t, 60*time.Second, "carry policy refusing a value", func(ctx context.Context) error {
		return refused(patchNode(ctx, agentA, "node-a", `{"metadata":{"labels":{"`+nic+`":"yes"}}}`, client.DryRunAll), `with the value "true"`)
	})

	if err := patchNode(ctx, agentA, "node-a", `{"metadata":{"labels":{"`+nic+`":"true","carry.podnet.io/mod.macvlan":"true","carry.podnet.io/nic-h.0123456789abcdef0123":"true"}}}`); err != nil {
		t.Errorf("agent of node-a adding carry labels to node-a: %v", err)
	}
	// Every shape pkg/carry makes, the hostDevice network's among them.
	for _, n := range []podnetv1.Network{
		{HostDevice: &podnetv1.HostDeviceNetwork{Names: []string{"ens3f*"}}},
		{Bridge: &podnetv1.BridgeNetwork{Name: "pnbr-a", VXLAN: &podnetv1.VXLANSpan{VNI: 1, Underlay: &podnetv1.VXLANUnderlay{CIDRs: []string{"10.0.0.0/8"}}}}},
		{Tunnel: &podnetv1.TunnelNetwork{WireGuard: &podnetv1.WireGuardTunnel{}, Underlay: &podnetv1.VXLANLocal{Address: "192.0.2.1"}}},
	} {
		for _, need := range carry.Needs(&n) {
			if err := patchNode(ctx, agentA, "node-a", `{"metadata":{"labels":{"`+need.Key()+`":"true"}}}`, client.DryRunAll); err != nil {
				t.Errorf("agent of node-a adding the carry label of %s: %v", need, err)
			}
		}
	}
	if err := patchNode(ctx, agentA, "node-a", `{"metadata":{"labels":{"carry.podnet.io/mod.macvlan":null}}}`); err != nil {
		t.Errorf("agent of node-a removing a carry label of node-a: %v", err)
	}
	for name, try := range map[string]struct {
		node, patch, want string
	}{
		"carry label on another node":    {"node-b", `{"metadata":{"labels":{"` + nic + `":"true"}}}`, "own Node"},
		"other label of its own node":    {"node-a", `{"metadata":{"labels":{"zone":"b"}}}`, "carry.podnet.io/ labels of its Node"},
		"new non-carry label":            {"node-a", `{"metadata":{"labels":{"podnet.io/evil":"true"}}}`, "carry.podnet.io/ labels of its Node"},
		"removing a non-carry label":     {"node-a", `{"metadata":{"labels":{"zone":null}}}`, "carry.podnet.io/ labels of its Node"},
		"carry label with another value": {"node-a", `{"metadata":{"labels":{"` + nic + `":"false"}}}`, `with the value "true"`},
		"carry label of another shape":   {"node-a", `{"metadata":{"labels":{"carry.podnet.io/anything":"true"}}}`, `<need>.<name>`},
		"taint with a carry label":       {"node-a", `{"metadata":{"labels":{"carry.podnet.io/mod.vxlan":"true"}},"spec":{"unschedulable":true}}`, "carry.podnet.io/ labels of its Node"},
	} {
		if err := refused(patchNode(ctx, agentA, try.node, try.patch), try.want); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	var a, b corev1.Node
	if err := admin.Get(ctx, client.ObjectKey{Name: "node-a"}, &a); err != nil {
		t.Fatal(err)
	}
	if err := admin.Get(ctx, client.ObjectKey{Name: "node-b"}, &b); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"zone": "a", nic: "true", "carry.podnet.io/nic-h.0123456789abcdef0123": "true"}
	if len(a.Labels) != len(want) || a.Labels[nic] != "true" || a.Labels["zone"] != "a" || a.Spec.Unschedulable {
		t.Errorf("node-a labels %v unschedulable %v, want %v", a.Labels, a.Spec.Unschedulable, want)
	}
	if len(b.Labels) != 1 {
		t.Errorf("node-b labels %v, want only zone", b.Labels)
	}
}
