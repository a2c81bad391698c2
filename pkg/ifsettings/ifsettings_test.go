package ifsettings

import (
	"os"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestTableIsTheCRDsEnum: the names a profile may list (the CRD's enum)
// are exactly the table's, so an admin can offer every setting the agent
// applies and none it does not.
func TestTableIsTheCRDsEnum(t *testing.T) {
	b, err := os.ReadFile("../../deploy/crd/podnet.io_networkprofiles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	name := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["networks"].Items.Schema.
		Properties["settings"].Items.Schema.Properties["name"]
	var enum []string
	for _, v := range name.Enum {
		enum = append(enum, strings.Trim(string(v.Raw), `"`))
	}
	slices.Sort(enum)
	if !slices.Equal(enum, Names()) {
		t.Fatalf("CRD enum %v, table %v", enum, Names())
	}
}

// TestTable: every sysctl names the interface, its kernel range holds its
// default, and Lookup finds only the table's names.
func TestTable(t *testing.T) {
	for _, name := range Names() {
		s, ok := Lookup(name)
		if !ok {
			t.Fatalf("Lookup(%q) found nothing", name)
		}
		if s.Sysctl != "" && (strings.Count(s.Sysctl, "%s") != 1 || s.Path("net1") != strings.Replace(s.Sysctl, "%s", "net1", 1)) {
			t.Errorf("%s: sysctl %q does not name the interface once", name, s.Sysctl)
		}
		if s.Sysctl == "" && name != TxQueueLen {
			t.Errorf("%s: neither a sysctl nor the link attribute", name)
		}
		if err := s.Check(s.Default); err != nil {
			t.Errorf("%s: default: %v", name, err)
		}
	}
	for _, bad := range []string{"net.ipv4.conf.all.arp_ignore", "arp-ignore", "ARP_IGNORE", "accept_redirects", "../all/arp_ignore"} {
		if _, ok := Lookup(bad); ok {
			t.Errorf("Lookup(%q) found a setting", bad)
		}
	}
}
