package webhook_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/webhook"
)

// claimPod is pod with one entry of spec.resourceClaims, naming a
// template or (claim true) a claim, used by its container.
func claimPod(namespace, name, source string, claim bool, annotations map[string]string) *corev1.Pod {
	p := pod(namespace, name, annotations)
	rc := corev1.PodResourceClaim{Name: "net", ResourceClaimTemplateName: ptr.To(source)}
	if claim {
		rc = corev1.PodResourceClaim{Name: "net", ResourceClaimName: ptr.To(source)}
	}
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{rc}
	p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "net"}}
	return p
}

// TestAPIServerPodsWithClaims drives pods whose networks come from
// ResourceClaims through a real kube-apiserver with the generated webhook
// configuration: a pod that names a template asking for a podnet network,
// and no annotation, is sent to the webhook, held by the wait container
// for the claim's interface, gets the readiness gate and loses NET_RAW,
// and carries no approval of its own; so does a pod naming a claim. A pod
// whose annotation and template together ask for more interfaces than
// the profile's maxInterfaces is refused, naming the template's request;
// one naming a template that does not exist is refused, naming the
// entry; a pod whose claims are another driver's is left untouched.
func TestAPIServerPodsWithClaims(t *testing.T) {
	h := startSharedHarnessWith(t, webhook.Options{Registerer: prometheus.NewRegistry()})
	ctx := context.Background()
	c := h.env.Client
	ns := h.testNamespace(t, "t1", map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"})
	h.createProfile(t, webhook.TelcoProfile())
	class, err := v1alpha1.DeviceClassName("telco-data", "data")
	if err != nil {
		t.Fatal(err)
	}
	template := func(name, class, params string) *resourcev1.ResourceClaimTemplate {
		claim := apiClaim(ns, class, params)
		return &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: resourcev1.ResourceClaimTemplateSpec{Spec: claim.Spec}}
	}
	named := apiClaim(ns, class, `{"interface":"dp1"}`)
	for _, o := range []client.Object{template("dp", class, `{"interface":"dp0","mtu":9000}`), template("gpu", "gpu.example.com", ""), named} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %s: %v", o.GetName(), err)
		}
	}

	held := claimPod(ns, "held", "dp", false, nil)
	if err := c.Create(ctx, held); err != nil {
		t.Fatalf("pod with a podnet template: %v", err)
	}
	requireHeldForClaims(t, held, "dp0")
	byClaim := claimPod(ns, "by-claim", named.Name, true, nil)
	if err := c.Create(ctx, byClaim); err != nil {
		t.Fatalf("pod with a podnet claim: %v", err)
	}
	requireHeldForClaims(t, byClaim, "dp1")

	gpu := claimPod(ns, "gpu", "gpu", false, nil)
	if err := c.Create(ctx, gpu); err != nil {
		t.Fatalf("pod with another driver's template: %v", err)
	}
	if len(gpu.Spec.ReadinessGates) > 0 || len(gpu.Spec.InitContainers) > 0 {
		t.Errorf("pod with another driver's template changed: gates %v, init containers %v", gpu.Spec.ReadinessGates, gpu.Spec.InitContainers)
	}

	for name, tc := range map[string]struct {
		pod   *corev1.Pod
		parts []string
	}{
		"over maxInterfaces": {claimPod(ns, "many", "dp", false, map[string]string{v1alpha1.NetworksAnnotation: "data@a0, data@a1, data@a2, data@a3"}),
			[]string{"spec.resourceClaims[0] (resourceclaimtemplate dp) spec.devices.config[0].opaque.parameters", "above maxInterfaces 4"}},
		"missing template": {claimPod(ns, "missing", "nope", false, nil),
			[]string{"spec.resourceClaims[0] names resourceclaimtemplate nope, which does not exist"}},
	} {
		err := c.Create(ctx, tc.pod)
		if err == nil {
			t.Errorf("%s: pod admitted", name)
			continue
		}
		for _, p := range append(tc.parts, `admission webhook "pods.podnet.io" denied the request`) {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("%s: denial %q does not name %q", name, err, p)
			}
		}
	}
}

// requireHeldForClaims checks a stored pod as its claims' networks need
// it: the readiness gate, the wait container waiting for iface, NET_RAW
// dropped, and no approval (a claim carries its own).
func requireHeldForClaims(t *testing.T, p *corev1.Pod, iface string) {
	t.Helper()
	if !slices.Contains(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: v1alpha1.NetworksReadyCondition}) {
		t.Errorf("pod %s: readiness gates %v, want %s", p.Name, p.Spec.ReadinessGates, v1alpha1.NetworksReadyCondition)
	}
	if len(p.Spec.InitContainers) != 1 || p.Spec.InitContainers[0].Name != v1alpha1.WaitContainerName || !slices.ContainsFunc(p.Spec.InitContainers[0].Args, func(a string) bool { return strings.Contains(a, iface) }) {
		t.Errorf("pod %s: init containers %+v, want the wait container for %s", p.Name, p.Spec.InitContainers, iface)
	}
	if sc := p.Spec.Containers[0].SecurityContext; sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "NET_RAW") {
		t.Errorf("pod %s: app security context %+v, want NET_RAW dropped", p.Name, sc)
	}
	if _, has := p.Annotations[v1alpha1.ApprovedAnnotation]; has {
		t.Errorf("pod %s carries an approval of its own: %v", p.Name, p.Annotations)
	}
}
