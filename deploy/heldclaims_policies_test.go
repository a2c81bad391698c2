package deploy

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// TestPolicyAgentTakesOverOnlyHeldClaims: the agent of node-a may take
// over a claim of node-b held for a StatefulSet (ipam.persistent), by an
// update that writes another pod UID and labels it node-a; it may not move
// a claim without a hold, label a held claim with another node, delete a
// held claim of node-b, or rewrite anything of it but the pod UID.
func TestPolicyAgentTakesOverOnlyHeldClaims(t *testing.T) {
	env := sharedPolicies(t)
	ctx := context.Background()
	admin := env.Client
	grantAgent(t, admin)
	agentA := impersonate(t, env, rest.ImpersonationConfig{UserName: agentUser, Groups: []string{"system:serviceaccounts", "system:authenticated"},
		Extra: map[string][]string{nodeNameExtra: {"node-a"}}})
	heldOn := func(name string) *v1alpha1.IPClaim {
		c := claimOn(name, "node-b")
		c.Spec.Pod.Name = "web-0"
		c.Spec.StatefulSet = &v1alpha1.StatefulSetReservation{Name: "web", UID: "sts-1", ReleaseAfterSeconds: 60}
		if err := admin.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	takeOver := func(c *v1alpha1.IPClaim, node string, f func(*v1alpha1.IPClaim)) error {
		moved := c.DeepCopy()
		moved.Labels[v1alpha1.NodeLabel] = node
		moved.Spec.Pod.UID = "next"
		if f != nil {
			f(moved)
		}
		return agentA.Update(ctx, moved)
	}
	plain := claimOn("data.10-0-0-20", "node-b")
	if err := admin.Create(ctx, plain); err != nil {
		t.Fatal(err)
	}
	// The API server loads the policy asynchronously: wait for it to
	// refuse a dry-run probe.
	testenv.Eventually(t, 60*time.Second, "policy refusing a claim of node-b", func(ctx context.Context) error {
		return refused(agentA.Create(ctx, claimOn("data.10-0-0-29", "node-b"), client.DryRunAll), "podnet.io/node=node-a")
	})

	if err := takeOver(heldOn("data.10-0-0-21"), "node-a", nil); err != nil {
		t.Errorf("agent of node-a taking over a held claim of node-b: %v", err)
	}
	// Only its label moves (the CRD refuses a new UID on a claim without a hold).
	if err := refused(takeOver(plain, "node-a", func(c *v1alpha1.IPClaim) { c.Spec.Pod.UID = plain.Spec.Pod.UID }), "podnet.io/node=node-a"); err != nil {
		t.Errorf("agent of node-a moving a claim without a hold: %v", err)
	}
	if err := refused(takeOver(heldOn("data.10-0-0-22"), "node-c", nil), "podnet.io/node=node-a"); err != nil {
		t.Errorf("agent of node-a moving a held claim to node-c: %v", err)
	}
	if err := refused(agentA.Delete(ctx, heldOn("data.10-0-0-23")), "podnet.io/node=node-a"); err != nil {
		t.Errorf("agent of node-a deleting a held claim of node-b: %v", err)
	}
	err := takeOver(heldOn("data.10-0-0-24"), "node-a", func(c *v1alpha1.IPClaim) { c.Spec.Pod.Namespace = "t2" })
	if err == nil {
		t.Errorf("agent of node-a moving a held claim to another namespace: allowed")
	}
	var got v1alpha1.IPClaim
	if err := admin.Get(ctx, client.ObjectKey{Name: "data.10-0-0-21"}, &got); err != nil || got.Spec.Pod.UID != "next" {
		t.Errorf("taken-over claim: pod %+v (%v), want UID next", got.Spec.Pod, err)
	}
}
