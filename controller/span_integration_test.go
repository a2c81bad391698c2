package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/controller/profilestatus"
	"podnet.io/podnet/test/testenv"
)

// overlayProfile offers one VXLAN bridge network.
func overlayProfile(name, bridge string, vni int32) *v1alpha1.NetworkProfile {
	return &v1alpha1.NetworkProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{{
			Name: name, Bridge: &v1alpha1.BridgeNetwork{Name: bridge, VXLAN: &v1alpha1.VXLANSpan{VNI: vni}},
		}}},
	}
}

// TestIntegrationControllerReportsVNIClash: a VNI used for two bridges
// turns both profiles' Ready False with reason Conflict and a message
// naming the VNI and the other profile; deleting one clears the other.
func TestIntegrationControllerReportsVNIClash(t *testing.T) {
	env := sharedEnv(t)
	c := env.Client
	ctx := context.Background()
	startController(t, env, time.Minute)
	ready := func(name string, want metav1.ConditionStatus, reason string, says ...string) {
		t.Helper()
		testenv.Eventually(t, time.Minute, "Ready of "+name, func(ctx context.Context) error {
			var p v1alpha1.NetworkProfile
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
				return err
			}
			cond := meta.FindStatusCondition(p.Status.Conditions, profilestatus.ConditionReady)
			if cond == nil || cond.Status != want || cond.Reason != reason || p.Status.ObservedGeneration != p.Generation {
				return fmt.Errorf("Ready condition %+v, want %s %s", cond, want, reason)
			}
			for _, s := range says {
				if !strings.Contains(cond.Message, s) {
					return fmt.Errorf("Ready message %q does not say %q", cond.Message, s)
				}
			}
			return nil
		})
	}
	first := overlayProfile("ovl-a", "pnbr-a", 5001)
	if err := c.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	ready("ovl-a", metav1.ConditionTrue, profilestatus.ReasonValid)
	requireSpanningColumn(t, env, "ovl-a", "ovl-a=vxlan/5001")
	second := overlayProfile("ovl-b", "pnbr-b", 5001)
	if err := c.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	ready("ovl-a", metav1.ConditionFalse, profilestatus.ReasonConflict, "spec.networks[0].bridge.vxlan.vni", "vni 5001", `profile "ovl-b"`)
	ready("ovl-b", metav1.ConditionFalse, profilestatus.ReasonConflict, "vni 5001", `profile "ovl-a"`)
	if err := c.Delete(ctx, second); err != nil {
		t.Fatal(err)
	}
	ready("ovl-a", metav1.ConditionTrue, profilestatus.ReasonValid)
}

// requireSpanningColumn reads a profile as `kubectl get -o wide` does (a
// server-side Table) and checks its Spanning column.
func requireSpanningColumn(t *testing.T, env *testenv.Env, name, want string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.RESTClient().Get().AbsPath("/apis/podnet.io/v1alpha1/networkprofiles", name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	for i, col := range table.ColumnDefinitions {
		if col.Name == "Spanning" {
			if got := table.Rows[0].Cells[i]; got != want {
				t.Fatalf("Spanning column %q, want %q", got, want)
			}
			return
		}
	}
	t.Fatalf("no Spanning column in %+v", table.ColumnDefinitions)
}
