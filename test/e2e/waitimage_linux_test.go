package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/image"
	"podnet.io/podnet/podwait"
	"podnet.io/podnet/webhook"
)

// guaranteedPod asks for the data network with requests equal to limits,
// so the webhook gives its wait container the default amounts as both.
func guaranteedPod(name string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
  namespace: %[2]s
  annotations: {%[3]s: data}
spec:
  nodeSelector: {kubernetes.io/hostname: %[4]s}
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/podnet/busybox:dev
    imagePullPolicy: Never
    command: ["sleep", "86400"]
    resources:
      requests: {cpu: 50m, memory: 32Mi}
      limits: {cpu: 50m, memory: 32Mi}
`, name, tenantNS, podnetv1.NetworksAnnotation, node1)
}

// testGuaranteedPodWithWaitImage: on the real kubelet and runc, a
// Guaranteed pod gets the wait container from the small wait image with
// the webhook's default requests and limits, which are enough for runc to
// start it and for podnet-wait to run to exit 0; the pod stays Guaranteed
// and becomes Ready with its interface.
func (s *suite) testGuaranteedPodWithWaitImage(t *testing.T) {
	const name = "guaranteed"
	s.apply(t, guaranteedPod(name))
	t.Cleanup(func() {
		if _, err := s.kubectlErr("", "-n", tenantNS, "delete", "pod", name, "--wait=true", "--timeout=2m"); err != nil {
			t.Errorf("delete pod %s: %v", name, err)
		}
	})
	var pod corev1.Pod
	eventually(t, 3*time.Minute, "pod "+name+" Ready with net1", func(ctx context.Context) error {
		if err := s.client.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: name}, &pod); err != nil {
			return err
		}
		if !ready(pod) {
			return fmt.Errorf("pod %s not Ready: %+v", name, pod.Status.InitContainerStatuses)
		}
		st, err := statusOf(pod)
		if err != nil {
			return err
		}
		if len(ipsOf(st, "net1")) == 0 {
			return fmt.Errorf("no addresses on net1 in %v", st)
		}
		return nil
	})
	if pod.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("QoS class %q, want Guaranteed", pod.Status.QOSClass)
	}
	if len(pod.Spec.InitContainers) != 1 || len(pod.Status.InitContainerStatuses) != 1 {
		t.Fatalf("init containers %+v, statuses %+v", pod.Spec.InitContainers, pod.Status.InitContainerStatuses)
	}
	w, ws := pod.Spec.InitContainers[0], pod.Status.InitContainerStatuses[0]
	if w.Name != podnetv1.WaitContainerName || w.Image != image.WaitImage || !slices.Equal(w.Command, []string{image.WaitBinary}) {
		t.Errorf("wait container %s: image %s, command %q; want %s, [%s]", w.Name, w.Image, w.Command, image.WaitImage, image.WaitBinary)
	}
	for res, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: webhook.DefaultWaitCPU, corev1.ResourceMemory: webhook.DefaultWaitMemory} {
		q := resource.MustParse(want)
		if r, l := w.Resources.Requests[res], w.Resources.Limits[res]; r.Cmp(q) != 0 || l.Cmp(q) != 0 {
			t.Errorf("wait container %s: request %s, limit %s, want both %s", res, r.String(), l.String(), want)
		}
	}
	term := ws.State.Terminated
	if term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
		t.Fatalf("wait container state %+v, want exit 0 (Completed)", ws.State)
	}
	// Its termination message says what it used, within its limit.
	u, err := podwait.ParseUsage(term.Message)
	limit := resource.MustParse(webhook.DefaultWaitMemory)
	if err != nil || u.CPU <= 0 || u.MaxRSS <= 0 || u.CgroupPeak <= 0 || u.CgroupPeak > limit.Value() {
		t.Errorf("wait container message %q (%+v, %v): want its CPU time, peak memory and cgroup peak under %s", term.Message, u, err, limit.String())
	}
	t.Logf("wait container: %s", term.Message)
}
