package agent

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"podnet.io/podnet/test/testenv"
)

func TestWantMultusStatus(t *testing.T) {
	cases := []struct {
		mode     string
		detected bool
		want     bool
	}{
		{MultusStatusAuto, false, true},
		{MultusStatusAuto, true, false},
		{MultusStatusOn, true, true},
		{MultusStatusOff, false, false},
	}
	for _, c := range cases {
		got, err := WantMultusStatus(c.mode, c.detected)
		if err != nil || got != c.want {
			t.Errorf("WantMultusStatus(%q, %v) = %v, %v; want %v", c.mode, c.detected, got, err, c.want)
		}
	}
	if _, err := WantMultusStatus("yes", false); err == nil || !strings.Contains(err.Error(), "--multus-network-status") || !strings.Contains(err.Error(), "auto, on or off") {
		t.Errorf("bad mode: err = %v, want one naming the flag and its values", err)
	}
}

// TestMultusDetectedThroughDiscovery asks a real kube-apiserver, first
// without and then with the NetworkAttachmentDefinition CRD that Multus
// installs.
func TestMultusDetectedThroughDiscovery(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	detect := func() bool {
		t.Helper()
		dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
		if err != nil {
			t.Fatal(err)
		}
		got, err := MultusDetected(dc)
		if err != nil {
			t.Fatalf("MultusDetected: %v", err)
		}
		return got
	}
	if detect() {
		t.Fatal("Multus detected on an API server without the NetworkAttachmentDefinition CRD")
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: nadResource + ".k8s.cni.cncf.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "k8s.cni.cncf.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: nadResource, Singular: "network-attachment-definition", Kind: "NetworkAttachmentDefinition", ShortNames: []string{"net-attach-def"}},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}}); err != nil {
		t.Fatalf("install the NetworkAttachmentDefinition CRD: %v", err)
	}
	if !detect() {
		t.Fatal("Multus not detected on an API server that serves NetworkAttachmentDefinitions")
	}
}
