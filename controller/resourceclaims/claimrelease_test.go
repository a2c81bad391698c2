package resourceclaims

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

func TestClaimReleaseReason(t *testing.T) {
	approved := map[string]string{v1alpha1.ApprovedAnnotation: "{}", v1alpha1.ApprovedSignatureAnnotation: "x"}
	claim := func(annotations map[string]string, drivers ...string) *resourceapi.ResourceClaim {
		c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Annotations: annotations}}
		if drivers != nil {
			c.Status.Allocation = &resourceapi.AllocationResult{}
			for _, d := range drivers {
				c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{Driver: d})
			}
		}
		return c
	}
	cases := []struct {
		name    string
		claim   *resourceapi.ResourceClaim
		optedIn bool
		want    string
	}{
		{"not allocated, namespace not opted in", claim(nil), false, ""},
		{"another driver's devices only", claim(nil, "gpu.example.com"), false, ""},
		{"podnet device, namespace not opted in", claim(nil, "gpu.example.com", v1alpha1.DRADriver), false, "namespace ns is not labelled podnet.io/enabled=true"},
		{"approved, namespace not opted in", claim(approved, v1alpha1.DRADriver), false, "namespace ns is not labelled podnet.io/enabled=true"},
		{"no approval, opted in", claim(nil, v1alpha1.DRADriver), true, "it has no podnet approval"},
		{"approval without signature, opted in", claim(map[string]string{v1alpha1.ApprovedAnnotation: "{}"}, v1alpha1.DRADriver), true, "it has no podnet approval"},
		{"approved, opted in", claim(approved, v1alpha1.DRADriver), true, ""},
	}
	for _, c := range cases {
		if got := ClaimReleaseReason(c.claim, c.optedIn); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestPodStarted(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	cases := []struct {
		name string
		st   corev1.PodStatus
		want bool
	}{
		{"new", corev1.PodStatus{}, false},
		{"pending, waiting to be created", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{State: waiting}}}, false},
		{"running", corev1.PodStatus{Phase: corev1.PodRunning}, true},
		{"failed", corev1.PodStatus{Phase: corev1.PodFailed}, true},
		{"pending, init container ran", corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{{State: running}}}, true},
		{"pending, restarted", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{State: waiting, RestartCount: 1}}}, true},
		{"pending, container created", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{State: waiting, ContainerID: "containerd://x"}}}, true},
	}
	for _, c := range cases {
		if got := podStarted(&corev1.Pod{Status: c.st}); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestScheduledAt(t *testing.T) {
	created, bound := time.Unix(1000, 0), time.Unix(2000, 0)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
	if got := scheduledAt(p); !got.Equal(created) {
		t.Errorf("unscheduled pod: %v, want its creation %v", got, created)
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(bound)}}
	if got := scheduledAt(p); !got.Equal(bound) {
		t.Errorf("bound pod: %v, want %v", got, bound)
	}
}
