package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// The DRA attacks' own profile and the namespace that did not opt in to
// podnet (the profile selects it, but podnet's webhook is never called
// there).
const (
	drxProfile = "e2e-drx"
	drxNetwork = "drx"
	drxOffNS   = "drx-off"
	// drxEditor is the tenant's identity that may edit the namespace's
	// objects (the built-in edit role).
	drxEditor = "system:serviceaccount:" + tenantNS + ":claim-editor"
)

var drxProfileYAML = fmt.Sprintf(`
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: %s}
spec:
  namespaceSelector:
    matchLabels: {tenant: a}
  networks:
  - name: %s
    bridge: {name: pnbr-drx}
    mtu: {max: 1500}
    ipam: {pools: ["192.168.82.0/24"]}
    dra: {}
`, drxProfile, drxNetwork)

// drxClaim is a ResourceClaim asking for one device of class with the
// opaque parameters params (a YAML flow mapping).
func drxClaim(ns, name, class, params string) string {
	return fmt.Sprintf(`
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  devices:
    requests:
    - name: net
      exactly: {deviceClassName: %[3]s}
    config:
    - requests: [net]
      opaque:
        driver: podnet.io
        parameters: %[4]s
`, ns, name, class, params)
}

// drxPod is a pod that uses the claim.
func drxPod(ns, name, claim string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  terminationGracePeriodSeconds: 1
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
`, ns, name, claim)
}

// testDRAAttacks: what a tenant may try against podnet's DRA path, each
// refused with nothing configured. The claim "orig" of tenant A, approved
// and used by a running pod, is the one the attacks copy and edit.
func (s *suite) testDRAAttacks(t *testing.T) {
	s.apply(t, drxProfileYAML)
	s.kubectl(t, "", "create", "namespace", drxOffNS)
	s.kubectl(t, "", "label", "namespace", drxOffNS, "tenant=a") // selected by the profile, not opted in
	s.kubectl(t, "", "-n", tenantNS, "create", "serviceaccount", "claim-editor")
	s.kubectl(t, "", "-n", tenantNS, "create", "rolebinding", "claim-editor", "--clusterrole=edit", "--serviceaccount="+tenantNS+":claim-editor")
	t.Cleanup(func() {
		s.kubectl(t, "", "delete", "namespace", drxOffNS, "--wait=false")
		s.kubectl(t, "", "-n", tenantNS, "delete", "pod", "drx-orig", "--ignore-not-found")
		s.kubectl(t, "", "-n", tenantNS, "delete", "resourceclaim", "orig", "--ignore-not-found")
		s.kubectl(t, "", "delete", "networkprofile", drxProfile, "--ignore-not-found")
	})
	class := mustClass(t, drxProfile, drxNetwork)
	s.waitDeviceClasses(t, class)
	s.waitWebhookOffers(t, tenantNS, drxNetwork, "192.168.82.0/24")

	t.Run("ClaimBeyondProfileRefused", func(t *testing.T) { s.testDRABeyondProfile(t, class) })
	t.Run("ClaimInNamespaceNotOptedIn", s.testDRAFromOutside)
	// The original claim, approved by the webhook; its copy is made at
	// once, within the approval's issue window, so that only the
	// approval's namespace binding stands in the copy's way.
	s.apply(t, drxClaim(tenantNS, "orig", class, "{interface: dra1}"))
	orig := s.getClaim(t, tenantNS, "orig")
	if orig.Annotations[podnetv1.ApprovedAnnotation] == "" || orig.Annotations[podnetv1.ApprovedSignatureAnnotation] == "" {
		t.Fatalf("claim orig has no approval: %v", orig.Annotations)
	}
	t.Run("CopiedClaimWithApproval", func(t *testing.T) { s.testDRACopiedClaim(t, orig) })
	t.Run("TenantEditsClaimAfterAllocation", func(t *testing.T) { s.testDRATenantEdits(t, orig) })
	t.Run("TenantCreatesDeviceClass", s.testDRATenantDeviceClass)
}

// testDRABeyondProfile: a claim asking MTU 9999 of a network whose
// maximum is 1500 is refused at CREATE, the error naming the claim's
// field and the limit; no claim is created.
func (s *suite) testDRABeyondProfile(t *testing.T, class string) {
	_, err := s.kubectlErr(drxClaim(tenantNS, "greedy", class, "{interface: dra1, mtu: 9999}"), "create", "-f", "-")
	if err == nil {
		t.Fatal("a claim asking mtu 9999 above the profile's 1500 was created")
	}
	for _, want := range []string{"spec.devices.config[0].opaque.parameters.mtu", "9999", "above the maximum mtu 1500"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal does not name %q: %v", want, err)
		}
	}
	t.Logf("refusal: %v", err)
	if err := s.client.Get(context.Background(), client.ObjectKey{Namespace: tenantNS, Name: "greedy"}, &resourceapi.ResourceClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("refused claim greedy: get says %v, want not found", err)
	}
}

// testDRACopiedClaim: the approved claim copied, approval and all, into
// the tenant's own namespace is refused at CREATE by the webhook; into a
// namespace not opted in (no webhook there) by the admission policy
// podnet-dra-claim-namespaces. Were it made there before the policy, the
// agent would refuse the approval, bound to the other namespace
// (TestVerifyClaim/copied_to_another_namespace).
func (s *suite) testDRACopiedClaim(t *testing.T, orig resourceapi.ResourceClaim) {
	ctx := context.Background()
	copyOf := func(ns string) *resourceapi.ResourceClaim {
		return &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "copy", Annotations: maps.Clone(orig.Annotations)},
			Spec:       *orig.Spec.DeepCopy(),
		}
	}
	err := s.client.Create(ctx, copyOf(tenantNS))
	if err == nil || !strings.Contains(err.Error(), "metadata.annotations["+podnetv1.ApprovedAnnotation+"]") || !strings.Contains(err.Error(), "only podnet's webhook writes it") {
		t.Fatalf("copied claim in the opted-in namespace: %v, want a refusal naming the approval annotation", err)
	}
	t.Logf("refusal in %s: %v", tenantNS, err)
	err = s.client.Create(ctx, copyOf(drxOffNS))
	if err == nil || !strings.Contains(err.Error(), claimPolicy) {
		t.Fatalf("copied claim in namespace %s (no webhook there): %v, want a refusal by %s", drxOffNS, err, claimPolicy)
	}
	t.Logf("refusal in %s: %v", drxOffNS, err)
}

// testDRATenantEdits: the tenant, with the edit role, tries to change the
// allocated claim of a running pod: its spec (immutable), its approval
// (the podnet-claim-approval policy) and its status (no RBAC for it).
// The claim and the pod's interface are as before.
func (s *suite) testDRATenantEdits(t *testing.T, orig resourceapi.ResourceClaim) {
	for _, want := range []struct{ sub, answer string }{{"", "yes"}, {"status", "no"}} {
		out, _ := s.kubectlErr("", "-n", tenantNS, "auth", "can-i", "patch", "resourceclaims.resource.k8s.io", "--subresource="+want.sub, "--as="+drxEditor)
		if strings.TrimSpace(out) != want.answer {
			t.Fatalf("tenant can-i patch resourceclaims (subresource %q): %q, want %s", want.sub, out, want.answer)
		}
	}
	s.apply(t, drxPod(tenantNS, "drx-orig", "orig"))
	eventually(t, 2*time.Minute, "pod drx-orig Running with dra1", func(context.Context) error {
		if p := s.getPod(t, tenantNS, "drx-orig"); p.Status.Phase != corev1.PodRunning || !ready(*p) {
			return fmt.Errorf("pod drx-orig %s, ready %v", p.Status.Phase, ready(*p))
		}
		return nil
	})
	before := s.waitClaimNetworkData(t, orig, "dra1")["dra1"]
	as := "--as=" + drxEditor
	tries := []struct{ what, want string }{
		{"spec", "field is immutable"},
		{"approval", "podnet-claim-approval"},
		{"approval removed", "podnet-claim-approval"},
		{"status", `cannot patch resource "resourceclaims/status"`},
	}
	for _, try := range tries {
		var err error
		switch try.what {
		case "spec":
			_, err = s.kubectlErr("", "-n", tenantNS, "patch", "resourceclaim", "orig", as, "--type=json",
				"-p", `[{"op":"replace","path":"/spec/devices/config/0/opaque/parameters","value":{"interface":"dra1","mtu":1500}}]`)
		case "approval":
			_, err = s.kubectlErr("", "-n", tenantNS, "annotate", "resourceclaim", "orig", as, "--overwrite",
				podnetv1.ApprovedAnnotation+"="+strings.Replace(orig.Annotations[podnetv1.ApprovedAnnotation], `"dra1"`, `"eth0"`, 1))
		case "approval removed":
			_, err = s.kubectlErr("", "-n", tenantNS, "annotate", "resourceclaim", "orig", as, podnetv1.ApprovedSignatureAnnotation+"-")
		case "status":
			_, err = s.kubectlErr("", "-n", tenantNS, "patch", "resourceclaim", "orig", as, "--subresource=status", "--type=merge",
				"-p", `{"status":{"devices":[{"driver":"podnet.io","pool":"`+node1+`","device":"forged","networkData":{"interfaceName":"eth0","ips":["10.0.0.1/32"]}}]}}`)
		}
		if err == nil || !strings.Contains(err.Error(), try.want) {
			t.Errorf("tenant changing the claim's %s: %v, want a refusal naming %q", try.what, err, try.want)
			continue
		}
		t.Logf("tenant changing the claim's %s: %v", try.what, err)
	}
	now := s.getClaim(t, tenantNS, "orig")
	if !maps.Equal(now.Annotations, orig.Annotations) {
		t.Errorf("claim orig's annotations changed: %v, were %v", now.Annotations, orig.Annotations)
	}
	if len(now.Status.Devices) != 1 || now.Status.Devices[0].NetworkData == nil || now.Status.Devices[0].NetworkData.InterfaceName != "dra1" {
		t.Errorf("claim orig's status.devices %+v, want the agent's dra1 alone", now.Status.Devices)
	}
	if after := s.waitClaimNetworkData(t, orig, "dra1")["dra1"]; after.HardwareAddress != before.HardwareAddress {
		t.Errorf("dra1's MAC %s, was %s", after.HardwareAddress, before.HardwareAddress)
	}
	s.checkNetworkData(t, "drx-orig", map[string]resourceapi.NetworkDeviceData{"dra1": before})
}

// testDRATenantDeviceClass: a tenant creating a DeviceClass that would
// select podnet's devices is Forbidden by RBAC, with view or edit.
func (s *suite) testDRATenantDeviceClass(t *testing.T) {
	forged := fmt.Sprintf(`
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: forged.%s}
spec:
  selectors:
  - cel: {expression: 'device.driver == "%s"'}
`, drxProfile, podnetv1.DRADriver)
	for _, who := range []string{"system:serviceaccount:" + tenantNS + ":viewer", drxEditor} {
		_, err := s.kubectlErr(forged, "create", "-f", "-", "--as="+who)
		if err == nil || !strings.Contains(err.Error(), "Forbidden") || !strings.Contains(err.Error(), `cannot create resource "deviceclasses"`) {
			t.Errorf("%s creating a DeviceClass: %v, want Forbidden", who, err)
			continue
		}
		t.Logf("%s: %v", who, err)
	}
	if err := s.client.Get(context.Background(), client.ObjectKey{Name: "forged." + drxProfile}, &resourceapi.DeviceClass{}); !apierrors.IsNotFound(err) {
		t.Errorf("forged DeviceClass: get says %v, want not found", err)
	}
}

func (s *suite) getClaim(t *testing.T, ns, name string) resourceapi.ResourceClaim {
	t.Helper()
	var c resourceapi.ResourceClaim
	if err := s.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &c); err != nil {
		t.Fatal(err)
	}
	return c
}
