package deploy

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// podnetSelector is the selector podnet-controller writes into the
// DeviceClass of network of profile (controller.DesiredDeviceClasses).
func podnetSelector(profile, network string) string {
	return fmt.Sprintf(`device.driver == "podnet.io" && device.attributes["podnet.io"].profile == %q && device.attributes["podnet.io"].network == %q`, profile, network)
}

// deviceClass is a DeviceClass with one CEL selector; profile "" leaves
// it without podnet's label.
func deviceClass(name, profile, expr string) *resourceapi.DeviceClass {
	c := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}}}}
	if profile != "" {
		c.Labels = map[string]string{"podnet.io/profile": profile}
	}
	return c
}

// claimSpec asks for one device of class, or, with alternative, for the
// first available of an unrelated class and class.
func claimSpec(class string, alternative bool) resourceapi.ResourceClaimSpec {
	r := resourceapi.DeviceRequest{Name: "net", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class}}
	if alternative {
		r = resourceapi.DeviceRequest{Name: "net", FirstAvailable: []resourceapi.DeviceSubRequest{
			{Name: "a", DeviceClassName: "gpu.example.com"}, {Name: "b", DeviceClassName: class}}}
	}
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{r}}}
}

func claimIn(ns, name, class string, alternative bool) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: claimSpec(class, alternative)}
}

func templateIn(ns, name, class string) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: claimSpec(class, false)}}
}

// TestPolicyPodnetDeviceClassesOnlyFromOptedInNamespaces: with a podnet
// DeviceClass (labelled podnet.io/profile) in place, a ResourceClaim or
// ResourceClaimTemplate naming it, directly or as a firstAvailable
// alternative, is refused in a namespace without podnet.io/enabled=true,
// whoever creates it (here the cluster admin); in an opted-in namespace it
// is created, and so is a claim of another driver's class anywhere, even
// one named like podnet's.
func TestPolicyPodnetDeviceClassesOnlyFromOptedInNamespaces(t *testing.T) {
	env := sharedPolicies(t)
	ctx := context.Background()
	admin := env.Client
	off := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "off-", Labels: map[string]string{"podnet.io/tenant": "telco"}}}
	if err := admin.Create(ctx, off); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*resourceapi.DeviceClass{
		deviceClass("data.telco", "telco", podnetSelector("telco", "data")),
		deviceClass("gpu.example.com", "", `device.driver == "gpu.example.com"`),
	} {
		if err := admin.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	why := "DeviceClass data.telco is podnet's: only namespaces labelled podnet.io/enabled=true may name it, not " + off.Name
	testenv.Eventually(t, 60*time.Second, "policy refusing a claim in namespace "+off.Name, func(ctx context.Context) error {
		return refused(admin.Create(ctx, claimIn(off.Name, "probe", "data.telco", false), client.DryRunAll), why)
	})
	refusals := map[string]client.Object{
		"claim":                       claimIn(off.Name, "direct", "data.telco", false),
		"claim naming it as fallback": claimIn(off.Name, "fallback", "data.telco", true),
		"claim template":              templateIn(off.Name, "tmpl", "data.telco"),
	}
	for what, o := range refusals {
		if err := refused(admin.Create(ctx, o), why); err != nil {
			t.Errorf("%s in a namespace not opted in: %v", what, err)
		}
	}
	allowed := map[string]client.Object{
		"claim of another driver's class in namespace off":    claimIn(off.Name, "gpu", "gpu.example.com", false),
		"claim of a class no DeviceClass is in namespace off": claimIn(off.Name, "none", "data.other", false),
		"claim in the opted-in namespace t1":                  claimIn("t1", "direct", "data.telco", false),
		"claim naming it as fallback in t1":                   claimIn("t1", "fallback", "data.telco", true),
		"claim template in t1":                                templateIn("t1", "tmpl", "data.telco"),
	}
	for what, o := range allowed {
		if err := admin.Create(ctx, o); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
}

// TestPolicyControllerChangesOnlyPodnetDeviceClasses: podnet-controller's
// token, with its generated role, creates, updates and deletes a
// DeviceClass named <network>.<profile>, labelled with that profile and
// selecting exactly that network's podnet.io devices, and brings back one
// an admin edited; it may not create another driver's class, a class whose
// label and name disagree or whose selector or config reaches beyond
// podnet's devices, nor change or delete a class it does not own.
func TestPolicyControllerChangesOnlyPodnetDeviceClasses(t *testing.T) {
	env := sharedPolicies(t)
	ctx := context.Background()
	admin := env.Client
	grantController(t, admin)
	ctl := impersonate(t, env, rest.ImpersonationConfig{UserName: controllerUser, Groups: []string{"system:serviceaccounts", "system:authenticated"}})
	const notOwned = "may change only DeviceClasses named <network>.<profile>"
	const beyond = "must select only the podnet.io devices"
	testenv.Eventually(t, 60*time.Second, "policy refusing another driver's class", func(ctx context.Context) error {
		return refused(ctl.Create(ctx, deviceClass("gpu.example.com", "", `device.driver == "gpu.example.com"`), client.DryRunAll), notOwned)
	})
	withConfig := deviceClass("cfg.telco", "telco", podnetSelector("telco", "cfg"))
	withConfig.Spec.Config = []resourceapi.DeviceClassConfiguration{{DeviceConfiguration: resourceapi.DeviceConfiguration{
		Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: runtime.RawExtension{Raw: []byte(`{}`)}}}}}
	creates := []struct {
		what  string
		class *resourceapi.DeviceClass
		want  string
	}{
		{"another driver's class, unlabelled", deviceClass("gpu.example.com", "", `device.driver == "gpu.example.com"`), notOwned},
		{"a class labelled with another profile than its name", deviceClass("data.telco", "other", podnetSelector("telco", "data")), notOwned},
		{"a class without a network in its name", deviceClass("telco", "telco", podnetSelector("telco", "")), notOwned},
		{"a class selecting every podnet device", deviceClass("data.telco", "telco", `device.driver == "podnet.io"`), beyond},
		{"a class selecting podnet's devices or any", deviceClass("data.telco", "telco", podnetSelector("telco", "data")+" || true"), beyond},
		{"a class selecting another network's devices", deviceClass("data.telco", "telco", podnetSelector("telco", "voice")), beyond},
		{"a class with another driver's config", withConfig, beyond},
	}
	for _, c := range creates {
		if err := refused(ctl.Create(ctx, c.class), c.want); err != nil {
			t.Errorf("controller creating %s: %v", c.what, err)
		}
	}
	own := deviceClass("data.telco", "telco", podnetSelector("telco", "data"))
	if err := ctl.Create(ctx, own); err != nil {
		t.Fatalf("controller creating its own class: %v", err)
	}
	// An admin edits it; the controller brings it back.
	edited := own.DeepCopy()
	edited.Spec.Selectors[0].CEL.Expression = "true"
	if err := admin.Update(ctx, edited); err != nil {
		t.Fatal(err)
	}
	edited.Spec.Selectors[0].CEL.Expression = podnetSelector("telco", "data")
	if err := ctl.Update(ctx, edited); err != nil {
		t.Errorf("controller bringing its edited class back: %v", err)
	}
	widened := edited.DeepCopy()
	widened.Spec.Selectors[0].CEL.Expression = "true"
	if err := refused(ctl.Update(ctx, widened), beyond); err != nil {
		t.Errorf("controller widening its class: %v", err)
	}
	relabelled := edited.DeepCopy()
	relabelled.Labels["podnet.io/profile"] = "other"
	if err := refused(ctl.Update(ctx, relabelled), notOwned); err != nil {
		t.Errorf("controller relabelling its class: %v", err)
	}
	foreign := deviceClass("nic.vendor", "", `device.driver == "nic.vendor"`)
	if err := admin.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	taken := foreign.DeepCopy()
	taken.Labels = map[string]string{"podnet.io/profile": "vendor"}
	taken.Spec.Selectors[0].CEL.Expression = podnetSelector("vendor", "nic")
	if err := refused(ctl.Update(ctx, taken), notOwned); err != nil {
		t.Errorf("controller taking over an admin's class: %v", err)
	}
	if err := refused(ctl.Delete(ctx, foreign), notOwned); err != nil {
		t.Errorf("controller deleting an admin's class: %v", err)
	}
	if err := ctl.Delete(ctx, own); err != nil {
		t.Errorf("controller deleting its own class: %v", err)
	}
}

// TestPolicyControllerReleasesOnlyUnpreparableClaims: podnet-controller's
// token may clear the allocation and reservations of a claim holding a
// podnet.io device in a namespace not opted in, or without an approval in
// an opted-in one; it may not release an approved claim of an opted-in
// namespace or a claim of another driver alone, change anything else of a
// claim's status, nor write a claim itself.
func TestPolicyControllerReleasesOnlyUnpreparableClaims(t *testing.T) {
	env := sharedPolicies(t)
	ctx := context.Background()
	admin := env.Client
	grantController(t, admin)
	off := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "off-"}}
	if err := admin.Create(ctx, off); err != nil {
		t.Fatal(err)
	}
	ctl := impersonate(t, env, rest.ImpersonationConfig{UserName: controllerUser, Groups: []string{"system:serviceaccounts", "system:authenticated"}})
	approved := map[string]string{v1alpha1.ApprovedAnnotation: "{}", v1alpha1.ApprovedSignatureAnnotation: "x"}
	outside := heldClaim(t, admin, off.Name, "outside", "podnet.io", approved)
	unapproved := heldClaim(t, admin, "t1", "unapproved", "podnet.io", nil)
	granted := heldClaim(t, admin, "t1", "granted", "podnet.io", approved)
	gpu := heldClaim(t, admin, off.Name, "gpu", "gpu.example.com", nil)
	// The controller writes with update, as ClaimRelease does.
	update := func(c *resourceapi.ResourceClaim, change func(*resourceapi.ResourceClaimStatus), opts ...client.SubResourceUpdateOption) error {
		c = c.DeepCopy()
		change(&c.Status)
		return ctl.Status().Update(ctx, c, opts...)
	}
	cleared := func(s *resourceapi.ResourceClaimStatus) { s.Allocation, s.ReservedFor = nil, nil }
	release := func(c *resourceapi.ResourceClaim) error { return update(c, cleared) }
	const approvedMsg = "it is approved and its namespace is opted in"
	const onlyRelease = "may only release a resource claim holding podnet.io devices"
	testenv.Eventually(t, 60*time.Second, "policy refusing to release an approved claim", func(ctx context.Context) error {
		return refused(update(granted, cleared, client.DryRunAll), approvedMsg)
	})
	if err := refused(release(granted), approvedMsg); err != nil {
		t.Errorf("controller releasing an approved claim of an opted-in namespace: %v", err)
	}
	if err := refused(release(gpu), onlyRelease); err != nil {
		t.Errorf("controller releasing another driver's claim: %v", err)
	}
	err := update(outside, func(s *resourceapi.ResourceClaimStatus) { s.ReservedFor = nil })
	if err := refused(err, onlyRelease); err != nil {
		t.Errorf("controller dropping only the reservations: %v", err)
	}
	if err := forbidden(ctl.Patch(ctx, outside.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`)))); err != nil {
		t.Errorf("controller writing a claim: %v", err)
	}
	if err := forbidden(ctl.Delete(ctx, outside.DeepCopy())); err != nil {
		t.Errorf("controller deleting a claim: %v", err)
	}
	for _, c := range []*resourceapi.ResourceClaim{outside, unapproved} {
		if err := release(c); err != nil {
			t.Errorf("controller releasing claim %s/%s: %v", c.Namespace, c.Name, err)
			continue
		}
		var got resourceapi.ResourceClaim
		if err := admin.Get(ctx, client.ObjectKeyFromObject(c), &got); err != nil {
			t.Fatal(err)
		}
		if got.Status.Allocation != nil || len(got.Status.ReservedFor) != 0 {
			t.Errorf("claim %s/%s after release: allocation %v, reserved for %v", c.Namespace, c.Name, got.Status.Allocation, got.Status.ReservedFor)
		}
	}
}

// heldClaim creates a claim in ns with annotations, allocated, as the
// scheduler does, one device of driver on node-a and reserved for a pod.
// No test makes a DeviceClass data.p, so any namespace may make it.
func heldClaim(t *testing.T, c client.Client, ns, name, driver string, annotations map[string]string) *resourceapi.ResourceClaim {
	t.Helper()
	ctx := context.Background()
	claim := claimIn(ns, name, "data.p", false)
	claim.Annotations = annotations
	if err := c.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	claim.Status.Allocation = &resourceapi.AllocationResult{
		Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "net", Driver: driver, Pool: "node-a", Device: "d0"},
		}},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-a"}}}}}},
	}
	claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: "uid-p"}}
	if err := c.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	return claim
}
