package v1alpha1_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
	"podnet.io/podnet/test/testenv"
)

// draSamples pairs each DRA sample profile of deploy/samples with the
// tenant's sample that asks for its network through a claim template.
var draSamples = []struct{ profile, tenant string }{
	{"networkprofile-dra.yaml", "demo-dra.yaml"},          // the walk-through of docs/dra.md
	{"networkprofile-dra-fabric.yaml", "dra-fabric.yaml"}, // its migration example
}

// tenantSample is what a tenant's DRA sample holds.
type tenantSample struct {
	namespace  *corev1.Namespace
	template   *resourcev1.ResourceClaimTemplate
	deployment *appsv1.Deployment
}

// TestDRASamples proves the DRA samples that docs/dra.md walks through
// with the webhook's own decisions: each template names the DeviceClass
// the controller keeps for a DRA-enabled network of its profile
// (DeviceClassName), the claim made from it is approved in the sample's
// namespace (policy.DecideClaim, as at the claim's CREATE) and so is the
// Deployment's pod with it (policy.DecideWithClaims, as at the pod's
// CREATE); a copy asking an MTU one above the network's maximum, and the
// claim in a namespace the profile does not select, are refused naming
// the claim's field.
func TestDRASamples(t *testing.T) {
	root := testenv.RepoRoot(t)
	for _, s := range draSamples {
		t.Run(s.tenant, func(t *testing.T) {
			profile := loadProfile(t, filepath.Join(root, "deploy", "samples", s.profile))
			if errs := policy.ValidateNetworkProfile(profile); len(errs) > 0 {
				t.Fatalf("%s: the policy refuses the profile: %v", s.profile, errs)
			}
			ten := loadTenant(t, filepath.Join(root, "deploy", "samples", s.tenant))
			set := policy.NewProfileSet([]v1alpha1.NetworkProfile{*profile})
			network := checkClasses(t, profile, ten.template)
			checkDeploymentUsesTemplate(t, ten)

			a, errs := policy.DecideClaim(policy.ClaimInput{Namespace: ten.namespace, Claim: claimFrom(ten.template, nil), Prepared: set})
			if len(errs) > 0 || a == nil {
				t.Fatalf("the template's claim is refused: %v", errs)
			}
			checkInterfaces(t, a, ten.template)

			source := "spec.resourceClaims[0] (resourceclaimtemplate " + ten.template.Name + ")"
			whole, errs := policy.DecideWithClaims(podInput(ten, set), []policy.PodClaim{{Source: source, Devices: &ten.template.Spec.Spec.Devices}})
			if len(errs) > 0 || whole == nil || len(whole.Interfaces) != len(a.Interfaces) {
				t.Fatalf("the Deployment's pod with its claim: %+v, %v; want the claim's %d interfaces", whole, errs, len(a.Interfaces))
			}

			max := *network.MTU.Max
			over := claimFrom(ten.template, map[string]any{"mtu": max + 1})
			_, errs = policy.DecideClaim(policy.ClaimInput{Namespace: ten.namespace, Claim: over, Prepared: set})
			requireRefusal(t, errs, "spec.devices.config[0].opaque.parameters.mtu", fmt.Sprint(max+1), fmt.Sprintf("-%d", max))
			_, errs = policy.DecideWithClaims(podInput(ten, set), []policy.PodClaim{{Source: source, Devices: &over.Spec.Devices}})
			requireRefusal(t, errs, source+" spec.devices.config[0].opaque.parameters.mtu", fmt.Sprint(max+1), fmt.Sprintf("-%d", max))

			elsewhere := ten.namespace.DeepCopy()
			elsewhere.Name = "not-selected"
			elsewhere.Labels = map[string]string{v1alpha1.EnabledLabel: "true"}
			_, errs = policy.DecideClaim(policy.ClaimInput{Namespace: elsewhere, Claim: claimFrom(ten.template, nil), Prepared: set})
			requireRefusal(t, errs, "spec.devices.requests[0].exactly.deviceClassName", network.Name)
		})
	}
}

// TestCRDDRASamples: a real kube-apiserver with podnet's CRDs takes each
// DRA sample as written: the profile, its dra block kept as the sample
// says and still valid to the policy once stored, and the tenant's
// Namespace, ResourceClaimTemplate and Deployment.
func TestCRDDRASamples(t *testing.T) {
	env := testenv.Shared(t)
	ctx := context.Background()
	for _, s := range draSamples {
		profile := loadProfile(t, filepath.Join(env.Root, "deploy", "samples", s.profile))
		if err := env.Client.Create(ctx, profile.DeepCopy()); err != nil {
			t.Fatalf("%s refused: %v", s.profile, err)
		}
		stored := &v1alpha1.NetworkProfile{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(profile), stored); err != nil {
			t.Fatal(err)
		}
		if errs := policy.ValidateNetworkProfile(stored); len(errs) > 0 {
			t.Errorf("%s: the policy refuses the stored profile: %v", s.profile, errs)
		}
		for i, n := range stored.Spec.Networks {
			if want := profile.Spec.Networks[i].DRA; want != nil && (n.DRA == nil || n.DRA.AttachmentsPerNode != want.AttachmentsPerNode) {
				t.Errorf("%s: network %q stored with dra %+v, want %+v", s.profile, n.Name, n.DRA, want)
			}
		}
		ten := loadTenant(t, filepath.Join(env.Root, "deploy", "samples", s.tenant))
		for _, obj := range []client.Object{ten.namespace, ten.template, ten.deployment} {
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Errorf("%s: %T %s refused: %v", s.tenant, obj, obj.GetName(), err)
			}
		}
	}
}

// TestDRADocShowsTheSamples: every YAML block of docs/dra.md whose first
// line is "# deploy/samples/FILE" is a verbatim excerpt of that file, so
// the page shows what TestDRASamples proves.
func TestDRADocShowsTheSamples(t *testing.T) {
	root := testenv.RepoRoot(t)
	page, err := os.ReadFile(filepath.Join(root, "docs", "dra.md"))
	if err != nil {
		t.Fatal(err)
	}
	shown := 0
	for _, block := range fencedBlocks(string(page)) {
		first, rest, _ := strings.Cut(block, "\n")
		file, ok := strings.CutPrefix(first, "# deploy/samples/")
		if !ok {
			continue
		}
		sample, err := os.ReadFile(filepath.Join(root, "deploy", "samples", file))
		if err != nil {
			t.Fatalf("docs/dra.md shows %s: %v", file, err)
		}
		if !strings.Contains(string(sample), rest) {
			t.Errorf("docs/dra.md shows lines of deploy/samples/%s that the file does not hold:\n%s", file, rest)
		}
		shown++
	}
	if shown == 0 {
		t.Fatal("docs/dra.md shows no block of deploy/samples: the marker line or the page moved")
	}
}

func loadProfile(t *testing.T, path string) *v1alpha1.NetworkProfile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := &v1alpha1.NetworkProfile{}
	if err := yaml.UnmarshalStrict(data, p); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p
}

// loadTenant reads a tenant sample: one Namespace, one
// ResourceClaimTemplate and one Deployment, each decoded strictly.
func loadTenant(t *testing.T, path string) tenantSample {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out tenantSample
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var obj any
		switch tm.Kind {
		case "Namespace":
			out.namespace = &corev1.Namespace{}
			obj = out.namespace
		case "ResourceClaimTemplate":
			out.template = &resourcev1.ResourceClaimTemplate{}
			obj = out.template
		case "Deployment":
			out.deployment = &appsv1.Deployment{}
			obj = out.deployment
		default:
			t.Fatalf("%s: unexpected kind %q", path, tm.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatalf("%s: %s: %v", path, tm.Kind, err)
		}
	}
	if out.namespace == nil || out.template == nil || out.deployment == nil {
		t.Fatalf("%s: want a Namespace, a ResourceClaimTemplate and a Deployment", path)
	}
	return out
}

// checkClasses checks that every request of the template names the
// DeviceClass of a DRA-enabled network of the profile, and returns the
// first such network.
func checkClasses(t *testing.T, profile *v1alpha1.NetworkProfile, tmpl *resourcev1.ResourceClaimTemplate) *v1alpha1.Network {
	t.Helper()
	var first *v1alpha1.Network
	for i, r := range tmpl.Spec.Spec.Devices.Requests {
		if r.Exactly == nil {
			t.Fatalf("request %d: want exactly", i)
		}
		_, name, _ := v1alpha1.ParseDeviceClassName(r.Exactly.DeviceClassName)
		var network *v1alpha1.Network
		for j := range profile.Spec.Networks {
			if n := &profile.Spec.Networks[j]; n.Name == name && n.DRA != nil {
				network = n
			}
		}
		if network == nil {
			t.Fatalf("request %d names class %q: profile %q has no DRA-enabled network %q", i, r.Exactly.DeviceClassName, profile.Name, name)
		}
		want, err := v1alpha1.DeviceClassName(profile.Name, network.Name)
		if err != nil || want != r.Exactly.DeviceClassName {
			t.Fatalf("request %d names class %q, the controller keeps %q (%v)", i, r.Exactly.DeviceClassName, want, err)
		}
		if first == nil {
			first = network
		}
	}
	if first == nil || first.MTU == nil || first.MTU.Max == nil {
		t.Fatal("the template asks for no network with an MTU maximum to overstep")
	}
	return first
}

// checkDeploymentUsesTemplate checks that the Deployment's pods name the
// template in the same namespace and that a container uses the claim.
func checkDeploymentUsesTemplate(t *testing.T, ten tenantSample) {
	t.Helper()
	spec := ten.deployment.Spec.Template.Spec
	if ten.template.Namespace != ten.namespace.Name || ten.deployment.Namespace != ten.namespace.Name {
		t.Fatalf("template in %q, Deployment in %q, namespace %q", ten.template.Namespace, ten.deployment.Namespace, ten.namespace.Name)
	}
	if len(spec.ResourceClaims) != 1 || spec.ResourceClaims[0].ResourceClaimTemplateName == nil || *spec.ResourceClaims[0].ResourceClaimTemplateName != ten.template.Name {
		t.Fatalf("the Deployment's pods name claims %+v, want the template %q", spec.ResourceClaims, ten.template.Name)
	}
	for _, c := range spec.Containers {
		for _, rc := range c.Resources.Claims {
			if rc.Name == spec.ResourceClaims[0].Name {
				return
			}
		}
	}
	t.Fatalf("no container of the Deployment uses the claim %q", spec.ResourceClaims[0].Name)
}

// claimFrom is the claim the resourceclaim controller makes from the
// template, with set merged into its first podnet.io config's parameters.
func claimFrom(tmpl *resourcev1.ResourceClaimTemplate, set map[string]any) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tmpl.Namespace, GenerateName: "pod-" + tmpl.Name + "-"}}
	tmpl.Spec.Spec.DeepCopyInto(&c.Spec)
	for i, cfg := range c.Spec.Devices.Config {
		if cfg.Opaque == nil || cfg.Opaque.Driver != v1alpha1.DRADriver || set == nil {
			continue
		}
		params := map[string]any{}
		_ = json.Unmarshal(cfg.Opaque.Parameters.Raw, &params)
		for k, v := range set {
			params[k] = v
		}
		raw, _ := json.Marshal(params)
		c.Spec.Devices.Config[i].Opaque.Parameters.Raw = raw
		break
	}
	return c
}

// checkInterfaces checks that the approval has one interface per request,
// named as its podnet.io config names it.
func checkInterfaces(t *testing.T, a *v1alpha1.Approval, tmpl *resourcev1.ResourceClaimTemplate) {
	t.Helper()
	var want []string
	for _, cfg := range tmpl.Spec.Spec.Devices.Config {
		var p struct {
			Interface string `json:"interface"`
		}
		if err := json.Unmarshal(cfg.Opaque.Parameters.Raw, &p); err != nil {
			t.Fatal(err)
		}
		want = append(want, p.Interface)
	}
	var got []string
	for _, ifc := range a.Interfaces {
		got = append(got, ifc.Interface)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("approved interfaces %v, want %v", got, want)
	}
}

// podInput is one of the Deployment's pods as the webhook sees it.
func podInput(ten tenantSample, set *policy.ProfileSet) policy.Input {
	tpl := ten.deployment.Spec.Template
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ten.namespace.Name, GenerateName: ten.deployment.Name + "-",
		Labels: tpl.Labels, Annotations: tpl.Annotations}, Spec: *tpl.Spec.DeepCopy()}
	return policy.Input{Namespace: ten.namespace, Pod: pod, Prepared: set}
}

// requireRefusal fails unless one error names field and says every part.
func requireRefusal(t *testing.T, errs field.ErrorList, fieldPath string, parts ...string) {
	t.Helper()
	for _, e := range errs {
		msg := e.Error()
		ok := e.Field == fieldPath
		for _, p := range parts {
			ok = ok && strings.Contains(msg, p)
		}
		if ok {
			t.Logf("refused: %s", msg)
			return
		}
	}
	t.Errorf("errors %v: want one at %s saying %q", errs, fieldPath, parts)
}

// fencedBlocks returns the bodies of a Markdown page's fenced code blocks.
func fencedBlocks(text string) []string {
	var blocks []string
	var cur *strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if cur != nil {
				blocks = append(blocks, cur.String())
				cur = nil
			} else {
				cur = &strings.Builder{}
			}
			continue
		}
		if cur != nil {
			cur.WriteString(line)
		}
	}
	return blocks
}
