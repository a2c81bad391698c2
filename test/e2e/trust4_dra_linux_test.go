package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The profile whose network offers one device per node, so that one claim
// held on a node is all its capacity.
const (
	capProfile  = "e2e-drx-cap"
	capNetwork  = "drxcap"
	capPool     = "192.168.83.0/24"
	claimPolicy = "podnet-dra-claim-namespaces"
)

var capProfileYAML = fmt.Sprintf(`
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: %s}
spec:
  namespaceSelector:
    matchLabels: {tenant: a}
  networks:
  - name: %s
    bridge: {name: pnbr-drxcap}
    ipam: {pools: [%q]}
    dra: {attachmentsPerNode: 1}
`, capProfile, capNetwork, capPool)

// capPod is a pod on node1 that uses the claim.
func capPod(ns, name, claim string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  terminationGracePeriodSeconds: 1
  nodeSelector: {kubernetes.io/hostname: %[4]s}
  resourceClaims:
  - {name: net, resourceClaimName: %[3]s}
  containers:
  - name: app
    image: localhost/podnet/busybox:dev
    imagePullPolicy: Never
    command: ["sleep", "86400"]
    securityContext: {capabilities: {drop: [NET_RAW]}}
    resources:
      claims:
      - {name: net}
`, ns, name, claim, node1)
}

// testDRAFromOutside: a namespace that never opted in (drxOffNS) tries to
// take the devices of a podnet network that offers one per node. Its
// ResourceClaim and ResourceClaimTemplate naming the podnet DeviceClass
// are refused at CREATE by the admission policy; a claim of another
// driver's class is not. A claim made there while the policy was not in
// force (as before an upgrade) is allocated node1's one device, the agent
// refuses to prepare it, and podnet-controller releases it (allocation
// and reservation cleared, Event ClaimReleased): the opted-in tenant's
// claim then gets node1's device and its pod runs, while the outside pod
// never does.
func (s *suite) testDRAFromOutside(t *testing.T) {
	ctx := context.Background()
	s.apply(t, capProfileYAML)
	t.Cleanup(func() {
		s.kubectl(t, "", "-n", drxOffNS, "delete", "pod", "drain", "--ignore-not-found", "--wait=false")
		s.kubectl(t, "", "-n", drxOffNS, "delete", "resourceclaim", "drain", "--ignore-not-found", "--wait=false")
		s.kubectl(t, "", "-n", tenantNS, "delete", "pod", "cap", "--ignore-not-found")
		s.kubectl(t, "", "-n", tenantNS, "delete", "resourceclaim", "cap", "--ignore-not-found")
		s.kubectl(t, "", "delete", "networkprofile", capProfile, "--ignore-not-found")
	})
	class := mustClass(t, capProfile, capNetwork)
	s.waitDeviceClasses(t, class)
	s.waitWebhookOffers(t, tenantNS, capNetwork, capPool)

	for _, manifest := range []string{drxClaim(drxOffNS, "outside", class, "{interface: dra1}"), drxTemplate(drxOffNS, "outside", class)} {
		_, err := s.kubectlErr(manifest, "create", "-f", "-")
		if err == nil || !strings.Contains(err.Error(), claimPolicy) || !strings.Contains(err.Error(), "only namespaces labelled podnet.io/enabled=true may name it") {
			t.Errorf("naming %s from namespace %s: %v, want a refusal by %s", class, drxOffNS, err, claimPolicy)
			continue
		}
		t.Logf("refusal: %v", err)
	}
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: drxOffNS, Name: "outside"}, &resourceapi.ResourceClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("refused claim outside: get says %v, want not found", err)
	}
	if err := s.client.Create(ctx, claimOfClass(drxOffNS, "other-driver", "gpu.example.com"), client.DryRunAll); err != nil {
		t.Errorf("a claim of another driver's class in namespace %s: %v", drxOffNS, err)
	}

	// A claim made while the policy was not in force.
	s.withoutClaimPolicy(t, func() { s.apply(t, drxClaim(drxOffNS, "drain", class, "{interface: dra1}")) })
	s.apply(t, capPod(drxOffNS, "drain", "drain"))
	s.waitPodEvent(t, drxOffNS, "drain", "has no podnet approval")
	eventually(t, 2*time.Minute, "claim drain released by podnet-controller", func(ctx context.Context) error {
		c := s.getClaim(t, drxOffNS, "drain")
		if c.Status.Allocation != nil || len(c.Status.ReservedFor) != 0 {
			return fmt.Errorf("claim drain: allocation %v, reserved for %v", c.Status.Allocation != nil, c.Status.ReservedFor)
		}
		var evs corev1.EventList
		if err := s.client.List(ctx, &evs, client.InNamespace(drxOffNS)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "ResourceClaim" && e.InvolvedObject.Name == "drain" && e.Reason == "ClaimReleased" {
				t.Logf("event %s %s: %s", e.Type, e.Reason, e.Message)
				return nil
			}
		}
		return fmt.Errorf("no ClaimReleased Event on claim drain")
	})

	// node1's one device is free again: the tenant's approved claim gets it.
	s.apply(t, drxClaim(tenantNS, "cap", class, "{interface: dra1}"))
	s.apply(t, capPod(tenantNS, "cap", "cap"))
	eventually(t, 2*time.Minute, "pod cap Running on "+node1, func(context.Context) error {
		if p := s.getPod(t, tenantNS, "cap"); p.Status.Phase != corev1.PodRunning || !ready(*p) {
			return fmt.Errorf("pod cap %s, ready %v", p.Status.Phase, ready(*p))
		}
		return nil
	})
	if c := s.getClaim(t, tenantNS, "cap"); c.Status.Allocation == nil || len(c.Status.Allocation.Devices.Results) != 1 || c.Status.Allocation.Devices.Results[0].Pool != node1 {
		t.Errorf("claim cap allocation %+v, want node1's device", c.Status.Allocation)
	}
	p := s.getPod(t, drxOffNS, "drain")
	if p.Status.Phase != corev1.PodPending {
		t.Errorf("pod %s/drain is %s, want Pending", drxOffNS, p.Status.Phase)
	}
	for _, st := range p.Status.ContainerStatuses {
		if st.State.Running != nil || st.State.Terminated != nil || st.RestartCount != 0 {
			t.Errorf("pod %s/drain: container %s ran: %+v", drxOffNS, st.Name, st.State)
		}
	}
}

// claimOfClass is a ResourceClaim asking for one device of class.
func claimOfClass(ns, name, class string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
			{Name: "net", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class}}}}}}
}

// drxTemplate is a ResourceClaimTemplate asking for one device of class.
func drxTemplate(ns, name, class string) string {
	return fmt.Sprintf(`
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  spec:
    devices:
      requests:
      - name: net
        exactly: {deviceClassName: %[3]s}
`, ns, name, class)
}

// withoutClaimPolicy runs do with the binding of podnet-dra-claim-namespaces
// deleted, as on a cluster where claims were made before podnet's policy
// was installed, and puts it back, waiting until it refuses again.
func (s *suite) withoutClaimPolicy(t *testing.T, do func()) {
	t.Helper()
	ctx := context.Background()
	var b admissionregistrationv1.ValidatingAdmissionPolicyBinding
	if err := s.client.Get(ctx, client.ObjectKey{Name: claimPolicy}, &b); err != nil {
		t.Fatal(err)
	}
	restore := func() {
		restored := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: b.Name, Labels: b.Labels, Annotations: b.Annotations}, Spec: b.Spec}
		if err := s.client.Create(ctx, restored); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("restore ValidatingAdmissionPolicyBinding %s: %v", claimPolicy, err)
		}
	}
	t.Cleanup(restore)
	if err := s.client.Delete(ctx, b.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	class := mustClass(t, capProfile, capNetwork)
	probe := func(ctx context.Context) error {
		return s.client.Create(ctx, claimOfClass(drxOffNS, "probe", class), client.DryRunAll)
	}
	eventually(t, time.Minute, "policy "+claimPolicy+" out of force", probe)
	do()
	restore()
	eventually(t, time.Minute, "policy "+claimPolicy+" in force again", func(ctx context.Context) error {
		if err := probe(ctx); err == nil || !strings.Contains(err.Error(), claimPolicy) {
			return fmt.Errorf("dry-run claim in %s: %v", drxOffNS, err)
		}
		return nil
	})
}

// waitPodEvent waits for an Event of the pod whose message contains why.
func (s *suite) waitPodEvent(t *testing.T, ns, pod, why string) {
	t.Helper()
	eventually(t, 2*time.Minute, fmt.Sprintf("pod %s/%s: an Event naming %q", ns, pod, why), func(ctx context.Context) error {
		var evs corev1.EventList
		if err := s.client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == pod && strings.Contains(e.Message, why) {
				t.Logf("event %s %s: %s", e.Type, e.Reason, e.Message)
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(evs.Items))
	})
}
