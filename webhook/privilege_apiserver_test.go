package webhook_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/pkg/policy"
)

// testApprovalsBoundToThePodJudged drives, through a real kube-apiserver
// and the generated webhook configuration (the harness of
// TestAPIServerAdmitsPodsThroughWebhook, with namespace t1 and
// TelcoProfile), what keeps an approval on the pod the webhook judged: the
// pod it admits (as the API server stores it) passes the agent's own
// check; a runtime attach to a pod that keeps NET_RAW is refused with what
// to do; an approval without a request, a forged network status and a
// hostPath to the agent's folder do not get in.
func testApprovalsBoundToThePodJudged(t *testing.T, h *harness) {
	ctx := context.Background()
	c := h.env.Client
	get := func(t *testing.T, name string) *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "t1", Name: name}, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	wantDenied := func(t *testing.T, err error, want ...string) {
		t.Helper()
		if err == nil {
			t.Fatal("allowed, want the webhook's denial")
		}
		for _, w := range append([]string{`admission webhook "pods.podnet.io" denied the request`}, want...) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v does not mention %q", err, w)
			}
		}
	}

	t.Run("the stored pod passes the agent's check", func(t *testing.T) {
		p := pod("t1", "bind-approved", map[string]string{v1alpha1.NetworksAnnotation: "data"})
		p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "localhost/podnet/busybox:dev"}}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		got := get(t, "bind-approved")
		a, err := approval.VerifyPod(h.verifier, got)
		if err != nil {
			t.Fatal(err)
		}
		if errs := policy.ValidatePodPrivilege(&got.Spec, a); len(errs) > 0 {
			t.Fatalf("the agent would refuse the pod the webhook admitted: %v", errs)
		}
	})

	t.Run("runtime attach to a pod keeping NET_RAW is refused with what to do", func(t *testing.T) {
		if err := c.Create(ctx, pod("t1", "bind-bare", nil)); err != nil {
			t.Fatal(err)
		}
		p := get(t, "bind-bare")
		base := p.DeepCopy()
		p.Annotations = map[string]string{v1alpha1.NetworksAnnotation: "data"}
		wantDenied(t, c.Patch(ctx, p, client.MergeFrom(base)),
			"pod t1/bind-bare", "spec.containers[0].securityContext.capabilities.drop", `container "app" holds NET_RAW`,
			`network "data" (interface net1) does not allow raw sockets`, "create the pod with podnet.io/networks set")
		if got := get(t, "bind-bare"); len(got.Annotations) != 0 {
			t.Fatalf("annotations written: %v", got.Annotations)
		}
	})

	t.Run("approval without request is refused", func(t *testing.T) {
		src := get(t, "bind-approved")
		err := c.Create(ctx, pod("t1", "bind-clone", map[string]string{
			v1alpha1.ApprovedAnnotation:          src.Annotations[v1alpha1.ApprovedAnnotation],
			v1alpha1.ApprovedSignatureAnnotation: src.Annotations[v1alpha1.ApprovedSignatureAnnotation],
		}))
		wantDenied(t, err, "metadata.annotations[podnet.io/approved]", "metadata.annotations[podnet.io/approved-signature]", "asks for no network")
	})

	t.Run("forged network status is removed at create", func(t *testing.T) {
		forged := `[{"name":"t1/data","interface":"net1","ips":["192.168.100.99"]}]`
		for name, ann := range map[string]map[string]string{
			"bind-forged-asks": {v1alpha1.NetworksAnnotation: "data", v1alpha1.NetworkStatusAnnotation: forged, v1alpha1.MultusNetworkStatusAnnotation: forged},
			"bind-forged-only": {v1alpha1.NetworkStatusAnnotation: forged, v1alpha1.MultusNetworkStatusAnnotation: forged},
		} {
			if err := c.Create(ctx, pod("t1", name, ann)); err != nil {
				t.Fatal(err)
			}
			got := get(t, name)
			for _, k := range []string{v1alpha1.NetworkStatusAnnotation, v1alpha1.MultusNetworkStatusAnnotation} {
				if _, ok := got.Annotations[k]; ok {
					t.Errorf("pod %s: %s stored: %v", name, k, got.Annotations)
				}
			}
		}
	})

	t.Run("hostPath to the agent's folder is refused", func(t *testing.T) {
		p := pod("t1", "bind-socket", map[string]string{v1alpha1.NetworksAnnotation: "data"})
		p.Spec.Volumes = []corev1.Volume{{Name: "podnet", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/run/podnet"}}}}
		wantDenied(t, c.Create(ctx, p), "spec.volumes[0].hostPath.path", `"/run/podnet"`, `volume "podnet" reaches /run/podnet`)
	})
}
