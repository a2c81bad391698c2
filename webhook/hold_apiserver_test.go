package webhook_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/webhook"
)

// TestAPIServerHoldsPodsWithNRI drives the webhook in nri mode through a
// real kube-apiserver: a stored podnet pod carries NRI's required-plugins
// annotation as a YAML list naming podnet's plugin, and no wait container;
// a tenant's own required plugins are refused on CREATE and UPDATE, with
// a message naming the key.
func TestAPIServerHoldsPodsWithNRI(t *testing.T) {
	h := startSharedHarnessWith(t, webhook.Options{Hold: v1alpha1.HoldNRI, Registerer: prometheus.NewRegistry()})
	ctx := context.Background()
	c := h.env.Client
	ns := h.testNamespace(t, "t1", map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"})
	h.createProfile(t, webhook.TelcoProfile())
	key := v1alpha1.NRIRequiredPluginsAnnotation

	if err := c.Create(ctx, pod(ns, "held", map[string]string{v1alpha1.NetworksAnnotation: "data"})); err != nil {
		t.Fatal(err)
	}
	var got corev1.Pod
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "held"}, &got); err != nil {
		t.Fatal(err)
	}
	// NRI's default validator reads the value as a YAML list of plugin
	// names.
	var plugins []string
	if err := yaml.Unmarshal([]byte(got.Annotations[key]), &plugins); err != nil || !slices.Equal(plugins, []string{v1alpha1.NRIPluginName}) {
		t.Errorf("%s = %q: plugins %v, %v; want [%s]", key, got.Annotations[key], plugins, err, v1alpha1.NRIPluginName)
	}
	if len(got.Spec.InitContainers) != 0 || len(got.Spec.ReadinessGates) != 1 {
		t.Errorf("init containers %v, readiness gates %v; want none and the networks-ready gate", got.Spec.InitContainers, got.Spec.ReadinessGates)
	}

	for _, k := range []string{key, key + "/pod", key + "/container.app"} {
		err := c.Create(ctx, pod(ns, "own", map[string]string{v1alpha1.NetworksAnnotation: "data", k: "[]"}))
		if err == nil || !strings.Contains(err.Error(), k) || !strings.Contains(err.Error(), "set by podnet's webhook") {
			t.Errorf("create with %s: %v", k, err)
		}
	}
	for name, edit := range map[string]func(a map[string]string){
		"remove":            func(a map[string]string) { delete(a, key) },
		"change":            func(a map[string]string) { a[key] = "[]" },
		"add container key": func(a map[string]string) { a[key+"/container.app"] = "[]" },
	} {
		p := got.DeepCopy()
		edit(p.Annotations)
		if err := c.Patch(ctx, p, client.MergeFrom(&got)); err == nil || !strings.Contains(err.Error(), "leave them as they are") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
