package deploy

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// TestPolicyAgentNodeHoldLabel installs deploy/policies and the agent's
// generated role on a real API server: an agent sets and removes
// hold.podnet.io/nri on its own Node, with the values of
// v1alpha1.NodeHoldNRIValues only; it may not set it on another node, nor
// change another label of its own while it is at it.
func TestPolicyAgentNodeHoldLabel(t *testing.T) {
	env := sharedPolicies(t)
	ctx := context.Background()
	admin := env.Client
	grantAgent(t, admin)
	for _, n := range []string{"node-a", "node-b"} {
		if err := admin.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"kubernetes.io/hostname": n}}}); err != nil {
			t.Fatal(err)
		}
	}
	agentA := impersonate(t, env, rest.ImpersonationConfig{UserName: agentUser, Groups: []string{"system:serviceaccounts", "system:authenticated"},
		Extra: map[string][]string{nodeNameExtra: {"node-a"}}})
	label := func(v string) string {
		return `{"metadata":{"labels":{"` + v1alpha1.NodeHoldNRILabel + `":` + v + `}}}`
	}
	// The API server loads each policy asynchronously. Two judge these
	// writes: podnet-agent-node-vnis (any other label) and
	// podnet-agent-node-hold (the label's value); wait until each refuses
	// a dry-run probe only it refuses.
	testenv.Eventually(t, 60*time.Second, "node policy refusing another label", func(ctx context.Context) error {
		return refused(patchNode(ctx, agentA, "node-a", `{"metadata":{"labels":{"zone":"b"}}}`, client.DryRunAll), "may change only")
	})
	testenv.Eventually(t, 60*time.Second, "policy refusing a bad value", func(ctx context.Context) error {
		return refused(patchNode(ctx, agentA, "node-a", label(`"yes"`), client.DryRunAll), "must be enforced, unenforced or unknown")
	})

	for _, v := range v1alpha1.NodeHoldNRIValues {
		if err := patchNode(ctx, agentA, "node-a", label(`"`+v+`"`)); err != nil {
			t.Errorf("agent of node-a reporting %s: %v", v, err)
		}
	}
	if err := patchNode(ctx, agentA, "node-a", label("null")); err != nil {
		t.Errorf("agent of node-a removing its report: %v", err)
	}
	if err := refused(patchNode(ctx, agentA, "node-a", label(`"yes"`)), "must be enforced, unenforced or unknown"); err != nil {
		t.Errorf("agent of node-a reporting garbage: %v", err)
	}
	// Refused by podnet-agent-node-hold or podnet-agent-node-vnis, whichever
	// the API server asks first.
	if err := refused(patchNode(ctx, agentA, "node-b", label(`"enforced"`)), "own Node (node-a)"); err != nil {
		t.Errorf("agent of node-a reporting for node-b: %v", err)
	}
	both := `{"metadata":{"labels":{"` + v1alpha1.NodeHoldNRILabel + `":"enforced","kubernetes.io/hostname":"node-b"}}}`
	if err := refused(patchNode(ctx, agentA, "node-a", both), "may change only"); err != nil {
		t.Errorf("agent of node-a changing another label with its report: %v", err)
	}
	var n corev1.Node
	if err := admin.Get(ctx, client.ObjectKey{Name: "node-b"}, &n); err != nil {
		t.Fatal(err)
	}
	if _, ok := n.Labels[v1alpha1.NodeHoldNRILabel]; ok {
		t.Errorf("node-b carries %s: %v", v1alpha1.NodeHoldNRILabel, n.Labels)
	}
}
