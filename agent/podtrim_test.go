package agent

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"podnet.io/podnet/agent/nodehold"
	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/agent/uninstall"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/pkg/hold"
)

// fatPod is a pod as a real cluster holds it: everything the agent reads
// and much it does not.
func fatPod() *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	big := corev1.Container{
		Image: "registry.example/app:1", Command: []string{"/app"}, Args: []string{"--serve"},
		Env:          []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
		Ports:        []corev1.ContainerPort{{ContainerPort: 8080}},
		Resources:    corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
		VolumeMounts: []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets"}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: "/ready"}}},
	}
	app, sidecar, setup := big, big, big
	app.Name = "app"
	app.SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}
	sidecar.Name, sidecar.RestartPolicy = "sidecar", &always
	setup.Name = v1alpha1.WaitContainerName
	setup.SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	debug := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", Env: big.Env}}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "t1", Name: "web-0", UID: "uid-1", ResourceVersion: "42", CreationTimestamp: created,
			Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{
				v1alpha1.NetworksAnnotation:      "data@net1",
				v1alpha1.NetworkStatusAnnotation: `[{"name":"t1/data","interface":"net1","ips":["192.168.100.7"]}]`,
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "ss"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Spec: corev1.PodSpec{
			NodeName: "node-a", HostNetwork: false, ServiceAccountName: "web", RestartPolicy: corev1.RestartPolicyOnFailure,
			ReadinessGates:      []corev1.PodReadinessGate{{ConditionType: v1alpha1.NetworksReadyCondition}},
			InitContainers:      []corev1.Container{setup, sidecar},
			Containers:          []corev1.Container{app},
			EphemeralContainers: []corev1.EphemeralContainer{debug},
			Volumes: []corev1.Volume{
				{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}},
				{Name: "run", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: v1alpha1.AgentRunDir}}},
			},
			Tolerations:  []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
			NodeSelector: map[string]string{"zone": "a"},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: v1alpha1.NetworksReadyCondition, Status: corev1.ConditionFalse, Reason: "Waiting"}},
			PodIPs:     []corev1.PodIP{{IP: "10.0.0.7"}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "registry.example/app:1", ImageID: "sha256:abc",
				ContainerID: "containerd://0123", Ready: true}},
			HostIP: "192.0.2.1", QOSClass: corev1.PodQOSBurstable,
		},
	}
}

// TestTrimPodKeepsWhatTheAgentReads: the cached pod keeps the metadata
// (without managedFields) and exactly the spec and status fields the agent
// reads, each container and volume in its place; every decision the agent
// takes from a pod is the same on the trimmed pod as on the whole one; a
// deletion tombstone passes through.
func TestTrimPodKeepsWhatTheAgentReads(t *testing.T) {
	fat := fatPod()
	got, err := TrimPod(fat.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	trimmed := got.(*corev1.Pod)

	want := fatPod()
	want.ManagedFields = nil
	want.Spec = corev1.PodSpec{
		NodeName: "node-a", ServiceAccountName: "web", RestartPolicy: corev1.RestartPolicyOnFailure,
		ReadinessGates: fat.Spec.ReadinessGates,
		InitContainers: []corev1.Container{
			{Name: v1alpha1.WaitContainerName, SecurityContext: fat.Spec.InitContainers[0].SecurityContext},
			{Name: "sidecar", RestartPolicy: fat.Spec.InitContainers[1].RestartPolicy},
		},
		Containers:          []corev1.Container{{Name: "app", SecurityContext: fat.Spec.Containers[0].SecurityContext}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}},
		Volumes:             []corev1.Volume{{Name: "token"}, {Name: "run", VolumeSource: fat.Spec.Volumes[1].VolumeSource}},
	}
	want.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: fat.Status.Conditions, PodIPs: fat.Status.PodIPs}
	if !reflect.DeepEqual(trimmed, want) {
		t.Errorf("TrimPod =\n%+v\nwant\n%+v", trimmed, want)
	}

	// What the agent decides from a pod.
	noRaw := &v1alpha1.Approval{Namespace: "t1", ServiceAccount: "web", RequestHash: approval.HashRequest("data@net1"),
		PodUID: "uid-1", Interfaces: []v1alpha1.ApprovedInterface{{Network: "data", Interface: "net1"}}}
	same := func(what string, whole, cached any) {
		t.Helper()
		if !reflect.DeepEqual(whole, cached) {
			t.Errorf("%s: whole pod %v, cached pod %v", what, whole, cached)
		}
	}
	msgFat, refusedFat := privilegeRefusal(fat, noRaw)
	msgTrim, refusedTrim := privilegeRefusal(trimmed, noRaw)
	if !refusedFat {
		t.Fatal("the whole pod must be refused (NET_ADMIN, NET_RAW kept, the agent's folder mounted)")
	}
	same("privilege refusal", []any{msgFat, refusedFat}, []any{msgTrim, refusedTrim})
	same("hold", hold.OfPod(fat, v1alpha1.HoldNRI), hold.OfPod(trimmed, v1alpha1.HoldNRI))
	for _, name := range []string{"app", "sidecar", v1alpha1.WaitContainerName, "debug"} {
		p1, k1 := nodehold.RestartPolicyOf(fat, name)
		p2, k2 := nodehold.RestartPolicyOf(trimmed, name)
		same("restart policy of "+name, []any{p1, k1}, []any{p2, k2})
	}
	same("approval binding", approval.CheckBinding(noRaw, fat), approval.CheckBinding(noRaw, trimmed))
	same("condition", podstate.FindCondition(fat), podstate.FindCondition(trimmed))
	same("held addresses", heldAddresses(fat), heldAddresses(trimmed))
	same("owner", ownerOf(fat, noRaw.Interfaces[0]), ownerOf(trimmed, noRaw.Interfaces[0]))
	same("sweep", uninstall.HoldsPodnet(fat), uninstall.HoldsPodnet(trimmed))
	moved := fatPod()
	moved.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.8"}}
	movedTrim, _ := TrimPod(moved.DeepCopy())
	same("change matters", podChangeMatters(fat, moved), podChangeMatters(trimmed, movedTrim.(*corev1.Pod)))

	tomb := cache.DeletedFinalStateUnknown{Key: "t1/web-0", Obj: fat}
	if out, _ := TrimPod(tomb); !reflect.DeepEqual(out, tomb) {
		t.Errorf("tombstone changed: %+v", out)
	}
}

// TestCacheOptionsTrimPods: the agent's pod informer stores pods through
// TrimPod.
func TestCacheOptionsTrimPods(t *testing.T) {
	for obj, by := range CacheOptions("node-a").ByObject {
		if _, ok := obj.(*corev1.Pod); !ok {
			continue
		}
		if by.Transform == nil {
			t.Fatal("the pod informer has no transform")
		}
		got, err := by.Transform(fatPod())
		if err != nil {
			t.Fatal(err)
		}
		want, _ := TrimPod(fatPod())
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("the pod informer's transform = %+v, want TrimPod's %+v", got, want)
		}
		return
	}
	t.Fatal("no pod informer in CacheOptions")
}
