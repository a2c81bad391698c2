package agent

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// TestPodChangeMatters: the kubelet's status updates and the agent's own
// status writes are skipped; anything the agent reads is not.
func TestPodChangeMatters(t *testing.T) {
	base := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{UID: "u1", Annotations: map[string]string{
				v1alpha1.NetworksAnnotation: "data", v1alpha1.ApprovedAnnotation: "sig",
			}},
			Spec:   corev1.PodSpec{NodeName: "n1"},
			Status: corev1.PodStatus{Phase: corev1.PodPending},
		}
	}
	now := metav1.NewTime(time.Now())
	for name, tc := range map[string]struct {
		change func(p *corev1.Pod)
		want   bool
	}{
		"nothing": {func(*corev1.Pod) {}, false},
		"kubelet conditions and containers": {func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true}}
		}, false},
		"the agent's status write": {func(p *corev1.Pod) {
			p.Annotations[v1alpha1.NetworkStatusAnnotation] = "[]"
			p.Annotations[v1alpha1.MultusNetworkStatusAnnotation] = "[]"
			p.Status.Conditions = []corev1.PodCondition{{Type: v1alpha1.NetworksReadyCondition, Status: corev1.ConditionTrue}}
		}, false},
		"networks asked":     {func(p *corev1.Pod) { p.Annotations[v1alpha1.NetworksAnnotation] = "data, more" }, true},
		"approval re-signed": {func(p *corev1.Pod) { p.Annotations[v1alpha1.ApprovedAnnotation] = "sig2" }, true},
		"annotation removed": {func(p *corev1.Pod) { delete(p.Annotations, v1alpha1.NetworksAnnotation) }, true},
		"deleted":            {func(p *corev1.Pod) { p.DeletionTimestamp = &now }, true},
		"phase":              {func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, true},
		"pod IPs":            {func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.1"}} }, true},
		"node":               {func(p *corev1.Pod) { p.Spec.NodeName = "n2" }, true},
		"new pod, same name": {func(p *corev1.Pod) { p.UID = "u2" }, true},
	} {
		cur := base()
		tc.change(cur)
		if got := podChangeMatters(base(), cur); got != tc.want {
			t.Errorf("%s: matters = %v, want %v", name, got, tc.want)
		}
	}
}
