package webhook

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"podnet.io/podnet/api/v1alpha1"
)

func TestWaitResources(t *testing.T) {
	list := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	withApp := func(r corev1.ResourceRequirements) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: r}}}}
	}
	defaults := corev1.ResourceRequirements{Requests: list(DefaultWaitCPU, DefaultWaitMemory), Limits: list(DefaultWaitCPU, DefaultWaitMemory)}
	withWait := withApp(corev1.ResourceRequirements{})
	withWait.Spec.InitContainers = []corev1.Container{{Name: v1alpha1.WaitContainerName, Resources: defaults}}
	storageOnly := withApp(corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")}})

	for _, c := range []struct {
		name string
		o    WaitOptions
		pod  *corev1.Pod
		want corev1.ResourceRequirements
	}{
		{"no resources anywhere", WaitOptions{}, withApp(corev1.ResourceRequirements{}), corev1.ResourceRequirements{}},
		{"only ephemeral storage", WaitOptions{}, storageOnly, corev1.ResourceRequirements{}},
		{"the wait container's own do not count", WaitOptions{}, withWait, corev1.ResourceRequirements{}},
		{"a memory request", WaitOptions{}, withApp(corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Mi")}}), defaults},
		{"a CPU limit", WaitOptions{}, withApp(corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}), defaults},
		{"admin amounts", WaitOptions{CPU: resource.MustParse("7m"), Memory: resource.MustParse("40Mi")}, withApp(corev1.ResourceRequirements{Requests: list("1", "1Gi"), Limits: list("1", "1Gi")}),
			corev1.ResourceRequirements{Requests: list("7m", "40Mi"), Limits: list("7m", "40Mi")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := waitResources(c.o, c.pod); !apiequality.Semantic.DeepEqual(got, c.want) {
				t.Errorf("waitResources = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestParseWaitResources(t *testing.T) {
	cpu, mem, err := ParseWaitResources("7m", "40Mi")
	if err != nil || cpu.String() != "7m" || mem.String() != "40Mi" {
		t.Errorf("ParseWaitResources(7m, 40Mi) = %s, %s, %v", cpu.String(), mem.String(), err)
	}
	for _, c := range []struct{ cpu, mem, want string }{
		{"lots", "40Mi", `--wait-cpu "lots"`},
		{"0", "40Mi", "--wait-cpu 0: must be positive and at most 1"},
		{"2", "40Mi", "--wait-cpu 2: must be positive and at most 1"},
		{"7m", "-1Mi", "--wait-memory -1Mi: must be positive and at most 1Gi"},
		{"7m", "2Gi", "--wait-memory 2Gi: must be positive and at most 1Gi"},
	} {
		if _, _, err := ParseWaitResources(c.cpu, c.mem); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseWaitResources(%q, %q) error %v, want one containing %q", c.cpu, c.mem, err, c.want)
		}
	}
}
