package deploy

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
)

// TestMultusMigrationOverlay: the overlay turns the webhook's Multus
// setting on and sends pods with Multus' request annotation to it; the
// default install does neither.
func TestMultusMigrationOverlay(t *testing.T) {
	for dir, on := range map[string]bool{".": false, "overlays/multus-migration": true} {
		t.Run(dir, func(t *testing.T) {
			objs := build(t, dir)
			var webhook appsv1.Deployment
			var config admissionregistrationv1.MutatingWebhookConfiguration
			find(t, objs, "Deployment", "podnet-webhook", &webhook)
			find(t, objs, "MutatingWebhookConfiguration", "podnet-webhook", &config)
			if got := slices.Contains(webhook.Spec.Template.Spec.Containers[0].Args, "--multus-requests"); got != on {
				t.Errorf("webhook args %v: --multus-requests present = %v, want %v", webhook.Spec.Template.Spec.Containers[0].Args, got, on)
			}
			conds := config.Webhooks[0].MatchConditions
			if len(conds) != 2 || conds[0].Name != "not-the-agent" || !strings.Contains(conds[1].Expression, "k.startsWith('podnet.io/')") {
				t.Fatalf("matchConditions %+v, want the agent's exclusion, then the one for podnet's annotations", conds)
			}
			if got := strings.Contains(conds[1].Expression, "k == 'k8s.v1.cni.cncf.io/networks'"); got != on {
				t.Errorf("matchCondition %q: sends Multus-annotated pods = %v, want %v", conds[1].Expression, got, on)
			}
		})
	}
}
