package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/controller"
	"podnet.io/podnet/test/testenv"
)

// TestIntegrationControllerHoldChoice runs the controller against a real
// API server: with nodes whose agents have not all reported NRI
// enforced, the ConfigMap says waitInitContainer; once every node says
// enforced it says nri; a new node that has not reported, or a node
// reporting unenforced, turns it back to waitInitContainer; removing that
// node turns it to nri again.
func TestIntegrationControllerHoldChoice(t *testing.T) {
	// Its own API server: the choice counts every Node of the cluster, and its Nodes and ConfigMap (in the one system namespace) outlive it.
	env := testenv.Start(t, testenv.Options{})
	c := env.Client
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.SystemNamespace}}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"node-a", "node-b"} {
		if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	startControllerWith(t, env, controller.Options{Grace: time.Second, Period: time.Minute, HoldChoiceNamespace: v1alpha1.SystemNamespace})
	label := func(node, v string) {
		t.Helper()
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, v1alpha1.NodeHoldNRILabel, v)
		if err := c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
	}
	waitChoice(t, c, "waitInitContainer", "2", "0")
	label("node-a", v1alpha1.NodeHoldNRIEnforced)
	waitChoice(t, c, "waitInitContainer", "2", "1")
	label("node-b", v1alpha1.NodeHoldNRIEnforced)
	waitChoice(t, c, "nri", "2", "2")
	if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-c"}}); err != nil {
		t.Fatal(err)
	}
	waitChoice(t, c, "waitInitContainer", "3", "2")
	label("node-c", v1alpha1.NodeHoldNRIUnenforced)
	label("node-b", v1alpha1.NodeHoldNRIUnknown)
	waitChoice(t, c, "waitInitContainer", "3", "1")
	label("node-b", v1alpha1.NodeHoldNRIEnforced)
	if err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-c"}}); err != nil {
		t.Fatal(err)
	}
	waitChoice(t, c, "nri", "2", "2")
}

// waitChoice waits for the hold choice ConfigMap to say mode, from nodes
// nodes of which enforced report NRI enforced.
func waitChoice(t *testing.T, c client.Client, mode, nodes, enforced string) {
	t.Helper()
	want := map[string]string{v1alpha1.HoldChoiceAnnotation: mode, v1alpha1.HoldChoiceNodesAnnotation: nodes, v1alpha1.HoldChoiceEnforcedAnnotation: enforced}
	testenv.Eventually(t, time.Minute, fmt.Sprintf("hold choice %v", want), func(ctx context.Context) error {
		var cm corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKey{Namespace: v1alpha1.SystemNamespace, Name: v1alpha1.HoldChoiceConfigMap}, &cm); err != nil {
			return err
		}
		for k, v := range want {
			if cm.Annotations[k] != v {
				return fmt.Errorf("ConfigMap says %v", cm.Annotations)
			}
		}
		return nil
	})
}
