package webhook_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
	"podnet.io/podnet/webhook"
)

// TestAPIServerHoldsPodsAuto drives the webhook in auto mode through a
// real kube-apiserver: with no choice written yet (a tenant's ConfigMap of
// the choice's name in its own namespace is none), a podnet pod gets the
// wait container; once the controller's ConfigMap says nri, new pods get
// NRI's required-plugins annotation and no wait container; when it flips
// back, new pods get the wait container again and the pod admitted with
// NRI keeps its annotation (the agent reports HoldNotEnforced there if its
// node cannot enforce it).
func TestAPIServerHoldsPodsAuto(t *testing.T) {
	// Its own API server: it makes the system namespace and the hold choice ConfigMap every auto webhook reads.
	h := startHarnessWith(t, webhook.Options{Hold: v1alpha1.HoldAuto, Registerer: prometheus.NewRegistry()})
	ctx := context.Background()
	c := h.env.Client
	h.createNamespace(t, "t1", map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"})
	h.createProfile(t, webhook.TelcoProfile())
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.SystemNamespace}}); err != nil {
		t.Fatal(err)
	}
	n := 0
	held := func() (wait, nri bool) {
		t.Helper()
		n++
		name := fmt.Sprintf("p%d", n)
		if err := c.Create(ctx, pod("t1", name, map[string]string{v1alpha1.NetworksAnnotation: "data"})); err != nil {
			t.Fatal(err)
		}
		var got corev1.Pod
		if err := c.Get(ctx, types.NamespacedName{Namespace: "t1", Name: name}, &got); err != nil {
			t.Fatal(err)
		}
		for _, ic := range got.Spec.InitContainers {
			wait = wait || ic.Name == v1alpha1.WaitContainerName
		}
		return wait, got.Annotations[v1alpha1.NRIRequiredPluginsAnnotation] == v1alpha1.NRIRequiredPluginsValue
	}
	// A tenant's ConfigMap of that name, in its own namespace, is not the
	// choice.
	forged := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: v1alpha1.HoldChoiceConfigMap,
		Annotations: map[string]string{v1alpha1.HoldChoiceAnnotation: string(v1alpha1.HoldNRI)}}}
	if err := c.Create(ctx, forged); err != nil {
		t.Fatal(err)
	}
	if wait, nri := held(); !wait || nri {
		t.Fatalf("no choice written: wait container %v, NRI annotation %v; want the wait container only", wait, nri)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: v1alpha1.SystemNamespace, Name: v1alpha1.HoldChoiceConfigMap,
		Annotations: map[string]string{v1alpha1.HoldChoiceAnnotation: string(v1alpha1.HoldNRI)}}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "new pods held by NRI", func(context.Context) error {
		if wait, nri := held(); wait || !nri {
			return fmt.Errorf("wait container %v, NRI annotation %v", wait, nri)
		}
		return nil
	})
	nriPod := fmt.Sprintf("p%d", n)
	cm.Annotations[v1alpha1.HoldChoiceAnnotation] = string(v1alpha1.HoldWaitInitContainer)
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "new pods held by the wait container again", func(context.Context) error {
		if wait, nri := held(); !wait || nri {
			return fmt.Errorf("wait container %v, NRI annotation %v", wait, nri)
		}
		return nil
	})
	var got corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: "t1", Name: nriPod}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations[v1alpha1.NRIRequiredPluginsAnnotation] != v1alpha1.NRIRequiredPluginsValue {
		t.Errorf("the pod admitted under nri lost its annotation: %v", got.Annotations)
	}
}
