package webhook_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"podnet.io/podnet/api/v1alpha1"
)

// testWaitContainerKeepsQoSAndQuota creates pods of each QoS class through
// the harness' real kube-apiserver, with and without podnet, and checks
// that the QoS class the API server computes at create (over init and app
// containers) is the same, and that a namespace with a ResourceQuota on
// requests and limits admits a podnet pod whose app sets both. The
// harness must have webhook.TelcoProfile. It runs inside
// TestAPIServerAdmitsPodsThroughWebhook: a process has one harness, whose
// metrics go to the global registry.
func testWaitContainerKeepsQoSAndQuota(t *testing.T, h *harness) {
	ctx := context.Background()
	c := h.env.Client
	h.createNamespace(t, "qos", map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"})
	h.createNamespace(t, "noqos", map[string]string{"tenant": "telco"})
	request := map[string]string{v1alpha1.NetworksAnnotation: `[{"name":"data","vlan":150}]`}

	amounts := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	for _, tc := range []struct {
		name      string
		resources corev1.ResourceRequirements
		want      corev1.PodQOSClass
	}{
		{"besteffort", corev1.ResourceRequirements{}, corev1.PodQOSBestEffort},
		{"burstable", corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Mi")}}, corev1.PodQOSBurstable},
		{"guaranteed", corev1.ResourceRequirements{Requests: amounts("1", "256Mi"), Limits: amounts("1", "256Mi")}, corev1.PodQOSGuaranteed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var classes []corev1.PodQOSClass
			for _, ns := range []string{"noqos", "qos"} {
				p := pod(ns, tc.name, request)
				p.Spec.Containers[0].Resources = tc.resources
				if err := c.Create(ctx, p); err != nil {
					t.Fatal(err)
				}
				got := &corev1.Pod{}
				if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: tc.name}, got); err != nil {
					t.Fatal(err)
				}
				if n := len(got.Spec.InitContainers); (ns == "qos") != (n == 1) {
					t.Fatalf("pod %s/%s has %d init containers", ns, tc.name, n)
				}
				classes = append(classes, got.Status.QOSClass)
			}
			if classes[0] != tc.want || classes[1] != tc.want {
				t.Errorf("QoS class without podnet %s, with podnet %s; want %s", classes[0], classes[1], tc.want)
			}
		})
	}

	t.Run("quota on requests and limits", func(t *testing.T) {
		h.createNamespace(t, "quota", map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"})
		hard := corev1.ResourceList{
			corev1.ResourceRequestsCPU: resource.MustParse("4"), corev1.ResourceRequestsMemory: resource.MustParse("4Gi"),
			corev1.ResourceLimitsCPU: resource.MustParse("4"), corev1.ResourceLimitsMemory: resource.MustParse("4Gi"),
		}
		q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "quota", Name: "compute"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
		if err := c.Create(ctx, q); err != nil {
			t.Fatal(err)
		}
		// The quota admission refuses pods while the quota has no usage;
		// with no quota controller here, the status is what it would
		// compute for an empty namespace.
		used := corev1.ResourceList{}
		for k := range hard {
			used[k] = resource.MustParse("0")
		}
		q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: used}
		if err := c.Status().Update(ctx, q); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name      string
			resources corev1.ResourceRequirements
		}{
			{"guaranteed", corev1.ResourceRequirements{Requests: amounts("1", "256Mi"), Limits: amounts("1", "256Mi")}},
			{"burstable", corev1.ResourceRequirements{Requests: amounts("100m", "64Mi"), Limits: amounts("1", "256Mi")}},
		} {
			p := pod("quota", tc.name, request)
			p.Spec.Containers[0].Resources = tc.resources
			if err := c.Create(ctx, p); err != nil {
				t.Errorf("%s pod refused in a namespace with a quota: %v", tc.name, err)
				continue
			}
			if len(p.Spec.InitContainers) != 1 || p.Spec.InitContainers[0].Resources.Limits.Cpu().IsZero() {
				t.Errorf("%s pod's init containers %+v, want the wait container with resources", tc.name, p.Spec.InitContainers)
			}
		}
	})
}
