package agent

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/policy"
)

// tuned is an approval with what an admin may narrow in place: an MTU and
// a route on net1.
var tuned = &v1alpha1.Approval{Namespace: "tenant", Interfaces: []v1alpha1.ApprovedInterface{
	{Interface: "net1", Network: "data", Kind: v1alpha1.KindBridge, Bridge: "pnbr-data", MTU: 9000,
		IPAM:   &v1alpha1.ApprovedIPAM{Pools: []string{"192.168.100.0/24"}, Gateways: []string{"192.168.100.1"}},
		Routes: []v1alpha1.ApprovedRoute{{Dst: "10.50.0.0/16", Gateway: "192.168.100.1"}}},
	twoNetworks.Interfaces[1],
}}

func appliedNamed(p dataplane.Pod, name string) *dataplane.Interface {
	for i := range p.Interfaces {
		if p.Interfaces[i].Name == name {
			return &p.Interfaces[i]
		}
	}
	return nil
}

// TestReconcileNarrowedInPlaceThenWidenedBack: a judgement that narrows
// net1 in place makes the agent apply the lower MTU without the route,
// keep net1's address and net2, stay ready under GrantNarrowed with a
// Warning Event naming the change; when the admin widens the profile
// again, the agent builds the signed approval whole again (it is the upper
// bound).
func TestReconcileNarrowedInPlaceThenWidenedBack(t *testing.T) {
	h := newHarness(t, newPod("p", "tuned", "good"))
	h.r.Verifier = fakeVerifier{approvals: map[string]*v1alpha1.Approval{"tuned": tuned}}
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	lowered := tuned.Interfaces[0]
	lowered.MTU, lowered.Routes = 1500, nil
	why := `mtu 9000 lowered to 1500: network "data": above the maximum mtu 1500 of profile "telco" (allowed 576-1500); route 10.50.0.0/16 removed`
	h.grants.revoked = []policy.Revocation{{Interface: "net1", Network: "data", Reason: why, Narrowed: &lowered}}
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	last := h.dp.applied[len(h.dp.applied)-1]
	net1 := appliedNamed(last, "net1")
	if net1 == nil || net1.MTU != 1500 || len(net1.Routes) != 0 || len(net1.Addresses) != 1 || appliedNamed(last, "net2") == nil {
		t.Fatalf("last apply %+v, want net1 at mtu 1500 without routes, with its address, and net2", last)
	}
	if slices.Contains(h.ip.released, "uid-p data net1") {
		t.Fatalf("released %v: a change in place keeps the address", h.ip.released)
	}
	c := condition(t, h.get(t, "p"))
	if c.Status != corev1.ConditionTrue || c.Reason != v1alpha1.ReasonGrantNarrowed ||
		!strings.Contains(c.Message, `grant narrowed in place: net1 (network "data"): `+why) || !strings.Contains(c.Message, "still attached: net1") {
		t.Fatalf("condition %+v", c)
	}
	if !h.events.has(corev1.EventTypeWarning, v1alpha1.ReasonGrantNarrowed) || h.events.has(corev1.EventTypeWarning, v1alpha1.ReasonGrantRevoked) {
		t.Fatalf("events %+v, want a Warning %s and no %s", h.events.events, v1alpha1.ReasonGrantNarrowed, v1alpha1.ReasonGrantRevoked)
	}

	// Widened again: the judgement revokes nothing, the approval is built
	// whole.
	h.grants.revoked = nil
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	last = h.dp.applied[len(h.dp.applied)-1]
	if net1 := appliedNamed(last, "net1"); net1 == nil || net1.MTU != 9000 || len(net1.Routes) != 1 {
		t.Fatalf("last apply %+v, want net1 back at mtu 9000 with its route", last)
	}
	if c := condition(t, h.get(t, "p")); c.Status != corev1.ConditionTrue || c.Reason != v1alpha1.ReasonAttached {
		t.Fatalf("condition %+v after widening", c)
	}
}

// TestReconcileNarrowedAndDetached: one interface narrowed in place and
// one detached make one GrantRevoked condition and Event naming both.
func TestReconcileNarrowedAndDetached(t *testing.T) {
	h := newHarness(t, newPod("p", "tuned", "good"))
	h.r.Verifier = fakeVerifier{approvals: map[string]*v1alpha1.Approval{"tuned": tuned}}
	h.sb.netns["uid-p"] = "/var/run/netns/cni-p"
	lowered := tuned.Interfaces[0]
	lowered.MTU = 1500
	h.grants.revoked = []policy.Revocation{
		{Interface: "net1", Network: "data", Reason: "mtu 9000 lowered to 1500", Narrowed: &lowered},
		{Interface: "net2", Network: "uplink", Reason: "master eth1 is now eth2 in network \"uplink\" of profile \"telco\""},
	}
	if _, err := h.reconcile(t, "p"); err != nil {
		t.Fatal(err)
	}
	last := h.dp.applied[len(h.dp.applied)-1]
	if len(last.Interfaces) != 1 || last.Interfaces[0].MTU != 1500 {
		t.Fatalf("last apply %+v, want only net1 at mtu 1500", last)
	}
	c := condition(t, h.get(t, "p"))
	if c.Status != corev1.ConditionFalse || c.Reason != v1alpha1.ReasonGrantRevoked ||
		!strings.Contains(c.Message, `grant revoked, detached: net2 (network "uplink"): master eth1 is now eth2`) ||
		!strings.Contains(c.Message, `grant narrowed in place: net1 (network "data"): mtu 9000 lowered to 1500`) {
		t.Fatalf("condition %+v", c)
	}
	if !slices.ContainsFunc(h.events.events, func(e event) bool {
		return e.Reason == v1alpha1.ReasonGrantRevoked && strings.Contains(e.Note, "master eth1 is now eth2") && strings.Contains(e.Note, "mtu 9000 lowered to 1500")
	}) {
		t.Fatalf("events %+v, want one GrantRevoked naming both changes", h.events.events)
	}
}
