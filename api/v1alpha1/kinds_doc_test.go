package v1alpha1_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/policy"
)

// TestCRDDescribesEachKindAsTheDataplaneBuildsIt holds what `kubectl
// explain networkprofile.spec.networks.<kind>` teaches against the
// dataplane's table of kinds: the generated CRD's description of each kind
// must name the link the pod gets, the node bridge when there is one, the
// parent link when there is one, and the shared subinterface when the pods
// share one; and it must name no other kind's pod link and no subinterface
// that the dataplane does not make.
func TestCRDDescribesEachKindAsTheDataplaneBuildsIt(t *testing.T) {
	kinds := networkKindDescriptions(t)
	for _, k := range policy.NetworkKinds() {
		if _, ok := kinds[policy.KindField(k)]; !ok {
			t.Errorf("the API offers kind %q, but the CRD has no field spec.networks[].%s", k, policy.KindField(k))
		}
	}
	// The pod links of each field, in the CRD's words: one field (tunnel)
	// may make several, and a tunnel's is "<type> device" (a bridge's
	// description names vxlan as its way of spanning nodes).
	word := func(s dataplane.Shape) string {
		if s.Tunnel {
			return s.PodLink + " device"
		}
		return s.PodLink
	}
	podLinks := map[string]string{}
	for _, k := range dataplane.Kinds() {
		s, _ := dataplane.ShapeOf(k)
		podLinks[word(s)] += policy.KindField(v1alpha1.NetworkKind(k)) + " "
	}
	for _, k := range dataplane.Kinds() {
		s, _ := dataplane.ShapeOf(k)
		f := policy.KindField(v1alpha1.NetworkKind(k))
		desc, ok := kinds[f]
		if !ok {
			t.Errorf("the dataplane makes kind %q, but the CRD has no field spec.networks[].%s", k, f)
			continue
		}
		text := strings.ToLower(desc)
		must := []string{word(s)}
		if s.Tunnel {
			must = append(must, "socket stays on the node")
		}
		if s.NodeBridge {
			must = append(must, "bridge")
		}
		if s.Parent {
			must = append(must, "parent")
		}
		if s.SharedSubinterface {
			must = append(must, "subinterface", "share")
		}
		for _, w := range must {
			if !strings.Contains(text, w) {
				t.Errorf("kind %q: the dataplane makes %+v, but the CRD's description does not say %q: %q", k, s, w, desc)
			}
		}
		var mustNot []string
		for l, fields := range podLinks {
			if l != word(s) && !strings.Contains(fields, f+" ") {
				mustNot = append(mustNot, l)
			}
		}
		if !s.SharedSubinterface {
			mustNot = append(mustNot, "subinterface")
		}
		for _, w := range mustNot {
			if strings.Contains(text, w) {
				t.Errorf("kind %q: the dataplane makes %+v, but the CRD's description says %q: %q", k, s, w, desc)
			}
		}
	}
}

// networkKindDescriptions reads the generated NetworkProfile CRD and
// returns the description of every field of spec.networks[].
func networkKindDescriptions(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "crd", "podnet.io_networkprofiles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatalf("NetworkProfile CRD: %v", err)
	}
	if len(crd.Spec.Versions) == 0 || crd.Spec.Versions[0].Schema == nil || crd.Spec.Versions[0].Schema.OpenAPIV3Schema == nil {
		t.Fatal("NetworkProfile CRD has no schema")
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	networks := spec.Properties["networks"]
	if networks.Items == nil || networks.Items.Schema == nil {
		t.Fatal("NetworkProfile CRD: spec.networks has no item schema")
	}
	out := map[string]string{}
	for name, p := range networks.Items.Schema.Properties {
		out[name] = p.Description
	}
	return out
}
