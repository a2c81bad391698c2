package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// testNRIWaiver: nobody can waive the runtime's NRI validator for a
// podnet pod. NRI reads <key>/container.<name> first, then <key>/pod,
// then <key>; a value of one's own under any of them would let a
// container start without podnet's plugin. On create the webhook refuses
// each; on an attached pod (app) the webhook and the policy podnet-pods
// refuse adding, changing or removing them. The same for the annotation
// the admin let the validator read to tolerate missing plugins
// (nriTolerate), under any of its forms and with any value.
func (s *suite) testNRIWaiver(t *testing.T, node, app string) {
	ctx := context.Background()
	key := podnetv1.NRIRequiredPluginsAnnotation
	for _, k := range []string{key + "/container.app", key + "/pod", key} {
		p := waiverPod(node, "nri-waiver-", k, "[]")
		err := s.client.Create(ctx, p)
		if err == nil {
			t.Errorf("pod %s with %s: [] was admitted", p.Name, k)
			continue
		}
		if !strings.Contains(err.Error(), key) {
			t.Errorf("pod with %s: [] refused for another reason: %v", k, err)
		}
	}
	for _, k := range []string{nriTolerate, nriTolerate + "/pod", nriTolerate + "/container.app"} {
		p := waiverPod(node, "nri-tolerate-", k, "true")
		if err := s.client.Create(ctx, p); err == nil {
			t.Errorf("pod %s with %s was admitted", p.Name, k)
		} else if !strings.Contains(err.Error(), k) || !strings.Contains(err.Error(), "without podnet's plugin") {
			t.Errorf("pod with %s refused for another reason: %v", k, err)
		}
	}
	pod := s.onlyPod(t, app)
	if got := pod.Annotations[key]; got != podnetv1.NRIRequiredPluginsValue {
		t.Fatalf("pod %s: %s = %q, want the webhook's %q", pod.Name, key, got, podnetv1.NRIRequiredPluginsValue)
	}
	for _, patch := range []string{
		`{"metadata":{"annotations":{"` + key + `":null}}}`,
		`{"metadata":{"annotations":{"` + key + `":"[]"}}}`,
		`{"metadata":{"annotations":{"` + key + `/container.app":"[]"}}}`,
		`{"metadata":{"annotations":{"` + nriTolerate + `/pod":"true"}}}`,
	} {
		out, err := s.kubectlErr("", "-n", tenantNS, "patch", "pod", pod.Name, "--type=merge", "-p", patch)
		if err == nil {
			t.Errorf("patch %s on pod %s was admitted: %s", patch, pod.Name, out)
			continue
		}
		if !strings.Contains(err.Error(), key) && !strings.Contains(err.Error(), nriTolerate) && !strings.Contains(err.Error(), "podnet-pods") {
			t.Errorf("patch %s refused for another reason: %v", patch, err)
		}
	}
	if got := s.onlyPod(t, app).Annotations[key]; got != podnetv1.NRIRequiredPluginsValue {
		t.Errorf("pod %s: %s = %q after the refused patches, want %q", pod.Name, key, got, podnetv1.NRIRequiredPluginsValue)
	}
}

// waiverPod is a tenant's podnet pod on node that carries annotation k
// with value v.
func waiverPod(node, prefix, k, v string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, GenerateName: prefix,
			Annotations: map[string]string{podnetv1.NetworksAnnotation: "data", k: v}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": node},
			Containers: []corev1.Container{{Name: "app", Image: "localhost/podnet/busybox:dev", ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "86400"}}},
		},
	}
}
