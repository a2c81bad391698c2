package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/controller/claimgc"
	"podnet.io/podnet/test/testenv"
)

// TestIntegrationControllerDeletesForgedClaims: claims that name live pods
// but that the pods' own agents never made (what a compromised node's
// agent can create under its own node's label) are deleted, with a
// Warning Event each: an address and a quota slot naming a pod of another
// node, a slot of another namespace's quota naming a pod of the attacker's
// node, and a claim for an interface the pod's approval does not name. The
// claims the pods' own agents would make stay.
func TestIntegrationControllerDeletesForgedClaims(t *testing.T) {
	env := sharedEnv(t)
	c := env.Client
	ctx := context.Background()
	tenantA, tenantB := testNamespace(t, c, "tenant-a", nil), testNamespace(t, c, "tenant-b", nil)
	startController(t, env, time.Second)

	victim := refOf(createPodOn(t, c, tenantB, "victim", "node-b"))
	mine := refOf(createPodOn(t, c, tenantA, "mine", "node-a"))
	otherIface := claimOf("data", "10.60.0.12", victim, "node-b")
	otherIface.Spec.Interface = "net9"
	forged := map[string]*v1alpha1.IPClaim{
		"address of another node's pod":        claimOf("data", "10.60.0.10", victim, "node-a"),
		"quota slot of another node's pod":     slotOf(tenantB, 0, victim, "node-a"),
		"another namespace's slot for own pod": renamed(slotOf(tenantA, 1, mine, "node-a"), slotOf(tenantB, 1, mine, "node-a").Name),
		"interface the approval does not name": otherIface,
		"namespace label of another namespace": relabelled(claimOf("data", "10.60.0.13", mine, "node-a"), v1alpha1.NamespaceLabel, tenantB),
		"address name of another address":      renamed(claimOf("data", "10.60.0.14", victim, "node-b"), "10-60-0-99"),
	}
	kept := map[string]*v1alpha1.IPClaim{
		"address of the pod's own node":    claimOf("data", "10.60.0.20", victim, "node-b"),
		"quota slot of the pod's own node": slotOf(tenantB, 2, victim, "node-b"),
		"own node's pod":                   claimOf("data", "10.60.0.21", mine, "node-a"),
	}
	for _, set := range []map[string]*v1alpha1.IPClaim{forged, kept} {
		for what, cl := range set {
			if err := c.Create(ctx, cl); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
	}
	testenv.Eventually(t, time.Minute, "forged claims deleted", func(ctx context.Context) error {
		for what, cl := range forged {
			err := c.Get(ctx, client.ObjectKeyFromObject(cl), &v1alpha1.IPClaim{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("%s: claim %s still there (err=%v)", what, cl.Name, err)
			}
		}
		return nil
	})
	for what, cl := range kept {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cl), &v1alpha1.IPClaim{}); err != nil {
			t.Errorf("%s: claim %s: %v", what, cl.Name, err)
		}
	}
	testenv.Eventually(t, time.Minute, "an Event for each forged claim", func(ctx context.Context) error {
		var list eventsv1.EventList
		if err := c.List(ctx, &list); err != nil {
			return err
		}
		for what, cl := range forged {
			if !hasForgedEvent(list.Items, cl) {
				return fmt.Errorf("%s: no %s Event on claim %s", what, claimgc.ReasonForgedClaim, cl.Name)
			}
		}
		return nil
	})
}

// hasForgedEvent: an Event of this claim, by UID: an earlier test's claim
// of the same name may have left one on the shared API server.
func hasForgedEvent(events []eventsv1.Event, claim *v1alpha1.IPClaim) bool {
	for _, e := range events {
		if e.Reason == claimgc.ReasonForgedClaim && e.Regarding.Kind == "IPClaim" && e.Regarding.Name == claim.Name && e.Regarding.UID == claim.UID &&
			e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, "because") {
			return true
		}
	}
	return false
}

func renamed(c *v1alpha1.IPClaim, name string) *v1alpha1.IPClaim {
	c.Name = name
	return c
}

func relabelled(c *v1alpha1.IPClaim, key, value string) *v1alpha1.IPClaim {
	c.Labels[key] = value
	return c
}
