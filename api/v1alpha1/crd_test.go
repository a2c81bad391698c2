package v1alpha1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
	"podnet.io/podnet/test/testenv"
)

func loadSample(t *testing.T, root string) *v1alpha1.NetworkProfile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "deploy", "samples", "networkprofile-telco.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p := &v1alpha1.NetworkProfile{}
	if err := yaml.UnmarshalStrict(data, p); err != nil {
		t.Fatalf("sample: %v", err)
	}
	return p
}

// TestCRDValidation installs the generated CRDs in a real kube-apiserver and
// checks that the sample is accepted and that each CEL and schema rule
// refuses a bad profile with a message that says what to fix.
func TestCRDValidation(t *testing.T) {
	env := testenv.Shared(t)
	ctx := context.Background()
	c := env.Client

	sample := loadSample(t, env.Root)
	if err := c.Create(ctx, sample.DeepCopy()); err != nil {
		t.Fatalf("sample refused: %v", err)
	}
	stored := &v1alpha1.NetworkProfile{}
	if err := c.Get(ctx, client.ObjectKey{Name: sample.Name}, stored); err != nil {
		t.Fatal(err)
	}
	if got := stored.Spec.Networks[1].Macvlan.Mode; got != "bridge" {
		t.Errorf("macvlan mode defaulted to %q, want bridge", got)
	}

	// Each bad profile is also judged by the policy, as if it had been
	// stored before the rule existed: a pod asking for the network it
	// spoils must be refused, not approved on a guess.
	networkOf := map[string]string{"data": "data", "uplink": "uplink", "tagged": "tagged"}
	tests := []struct {
		name   string
		mutate func(s *v1alpha1.NetworkProfileSpec)
		want   string
	}{
		{"two kinds", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].Macvlan = &v1alpha1.MacvlanNetwork{Master: "eth1"}
		}, "exactly one of bridge, macvlan, ipvlan, vlan, tunnel, hostDevice must be set"},
		{"no kind", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].Bridge = nil
		}, "exactly one of bridge, macvlan, ipvlan, vlan, tunnel, hostDevice must be set"},
		{"default mtu above max", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].MTU.Default = ptr(9100)
		}, "default must lie within min and max"},
		{"min above max", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].MTU.Min = ptr(9500)
		}, "min must not exceed max"},
		{"mtu below 576", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].MTU.Min = ptr(500)
		}, "should be greater than or equal to 576"},
		{"vlan range descending", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].Bridge.VLAN.Allowed = []string{"199-100"}
		}, "allowed VLANs must be IDs or ascending ranges within 1-4094"},
		{"vlan outside 1-4094", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].Bridge.VLAN.Allowed = []string{"4000-4095"}
		}, "allowed VLANs must be IDs or ascending ranges within 1-4094"},
		{"vlan range syntax", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].Bridge.VLAN.Allowed = []string{"100..199"}
		}, "should match"},
		{"vlan network without vlans", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[2].VLAN.VLAN = v1alpha1.VLANPolicy{}
		}, "set a default VLAN or allowed VLANs"},
		{"pool not a cidr", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].IPAM.Pools = []string{"192.168.100.0"}
		}, "pools must be CIDRs"},
		{"pool with host bits", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].IPAM.Pools = []string{"192.168.100.1/24"}
			s.Networks[0].IPAM.Gateways = nil
		}, "pools must be network addresses without host bits"},
		{"two ipv4 pools", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].IPAM.Pools = []string{"192.168.100.0/24", "192.168.101.0/24"}
			s.Networks[0].IPAM.Gateways = nil
		}, "at most one IPv4 and one IPv6 pool"},
		{"gateway outside pools", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].IPAM.Gateways = []string{"192.168.200.1"}
		}, "each gateway must lie inside one of the pools"},
		{"gateway not an ip", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].IPAM.Gateways = []string{"gw"}
		}, "gateways must be IP addresses"},
		{"allowed route not a cidr", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].Routes.Allowed = []string{"10.50.0.0"}
		}, "routes.allowed must be CIDRs"},
		{"allowed route with host bits", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].Routes.Allowed = []string{"10.50.0.1/16"}
		}, "routes.allowed must be network addresses"},
		{"network name not a label", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].Name = "Data_1"
		}, "should match"},
		{"duplicate network name", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[1].Name = "data"
		}, "Duplicate value"},
		{"bridge name too long", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].Bridge.Name = "pnbr-data-too-long"
		}, "may not be more than 15"},
		{"master with a slash", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[1].Macvlan.Master = "eth1/x"
		}, "should match"},
		{"macvlan mode", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[1].Macvlan.Mode = "l2"
		}, "supported values"},
		{"address cap above 4096", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].IPAM.MaxAddressesPerNamespace = ptr(5000)
		}, "should be less than or equal to 4096"},
		{"address cap zero", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].IPAM.MaxAddressesPerNamespace = ptr(0)
		}, "should be greater than or equal to 1"},
		{"address cap and unlimited", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks[0].IPAM.MaxAddressesPerNamespace = ptr(8)
			s.Networks[0].IPAM.UnlimitedAddressesPerNamespace = true
		}, "set at most one of maxAddressesPerNamespace and unlimitedAddressesPerNamespace"},
		{"maxInterfaces zero", func(s *v1alpha1.NetworkProfileSpec) {
			s.MaxInterfaces = -1
		}, "should be greater than or equal to 1"},
		{"grants nothing", func(s *v1alpha1.NetworkProfileSpec) {
			s.Networks = nil
			s.PrimaryInterface = nil
		}, "a profile grants at least one network or the primaryInterface tuning"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := sample.DeepCopy()
			p.Name = "bad-" + strings.ReplaceAll(tc.name, " ", "-")
			tc.mutate(&p.Spec)
			err := c.Create(ctx, p)
			if err == nil {
				t.Fatalf("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("refused, but the message lacks %q:\n%v", tc.want, err)
			}
			for _, n := range p.Spec.Networks {
				if networkOf[n.Name] == "" || apiequality.Semantic.DeepEqual(n, networkNamed(sample, n.Name)) {
					continue
				}
				req := fmt.Sprintf(`[{"name":%q}]`, n.Name)
				if n.Name == "tagged" {
					req = `[{"name":"tagged","vlan":300}]`
				}
				if a, _ := policy.Decide(policy.Input{Namespace: telcoNS(), Pod: podAsking(req), Profiles: []v1alpha1.NetworkProfile{*p}}); a != nil {
					t.Errorf("policy approved %s on the refused profile: %+v", req, a)
				}
			}
			if p.Spec.MaxInterfaces != sample.Spec.MaxInterfaces {
				if a, _ := policy.Decide(policy.Input{Namespace: telcoNS(), Pod: podAsking("data"), Profiles: []v1alpha1.NetworkProfile{*p}}); a != nil {
					t.Errorf("policy approved on a profile with maxInterfaces %d", p.Spec.MaxInterfaces)
				}
			}
		})
	}

	t.Run("printer columns", func(t *testing.T) {
		cs, err := kubernetes.NewForConfig(env.Config)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := cs.RESTClient().Get().AbsPath("/apis/podnet.io/v1alpha1/networkprofiles", sample.Name).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var table metav1.Table
		if err := json.Unmarshal(raw, &table); err != nil {
			t.Fatal(err)
		}
		cells := map[string]any{}
		for i, col := range table.ColumnDefinitions {
			cells[col.Name] = table.Rows[0].Cells[i]
		}
		// A column of a list (.spec.networks[*].name) would show its first
		// element only, so the columns are scalars and maps.
		if cells["Namespace-Labels"] != `{"podnet.io/tenant":"telco"}` {
			t.Errorf("Namespace-Labels column %q", cells["Namespace-Labels"])
		}
		if cells["Primary-MTU-Max"] != float64(8900) {
			t.Errorf("Primary-MTU-Max column %v", cells["Primary-MTU-Max"])
		}
		if cells["Max-Interfaces"] != float64(4) {
			t.Errorf("Max-Interfaces column %v", cells["Max-Interfaces"])
		}
	})

	t.Run("status subresource", func(t *testing.T) {
		p := &v1alpha1.NetworkProfile{}
		if err := c.Get(ctx, client.ObjectKey{Name: sample.Name}, p); err != nil {
			t.Fatal(err)
		}
		// Status is a subresource: a write of the whole object (what an
		// admin's kubectl apply does) cannot set it, so only the controller
		// that owns it writes it.
		p.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Consistent", LastTransitionTime: metav1.Now()}}
		if err := c.Update(ctx, p.DeepCopy()); err != nil {
			t.Fatalf("update: %v", err)
		}
		stored := &v1alpha1.NetworkProfile{}
		if err := c.Get(ctx, client.ObjectKey{Name: sample.Name}, stored); err != nil {
			t.Fatal(err)
		}
		if len(stored.Status.Conditions) != 0 {
			t.Fatalf("a write of the whole object set the status: %+v", stored.Status)
		}
		p.ResourceVersion = stored.ResourceVersion
		if err := c.Status().Update(ctx, p); err != nil {
			t.Fatalf("status update: %v", err)
		}
		gen := p.Generation
		if err := c.Get(ctx, client.ObjectKey{Name: sample.Name}, p); err != nil {
			t.Fatal(err)
		}
		if len(p.Status.Conditions) != 1 || p.Generation != gen {
			t.Fatalf("status not stored through the subresource, or it bumped the generation: %+v", p.Status)
		}
	})

	// The stored sample, with the API server's defaults, approves a
	// request from a matching namespace.
	t.Run("policy on the stored sample", func(t *testing.T) {
		list := &v1alpha1.NetworkProfileList{}
		if err := c.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		a, errs := policy.Decide(policy.Input{Namespace: telcoNS(), Pod: podAsking(`data, uplink@net9`), Profiles: list.Items})
		if len(errs) > 0 {
			t.Fatalf("denied: %v", errs.ToAggregate())
		}
		if len(a.Interfaces) != 2 || a.Interfaces[0].VLAN != 100 || a.Interfaces[1].Mode != "bridge" || a.Profiles[0].Generation != stored.Generation {
			t.Fatalf("unexpected approval %+v", a)
		}
	})
}

func ptr(v int32) *int32 { return &v }

func telcoNS() *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t1", Labels: map[string]string{"podnet.io/tenant": "telco", v1alpha1.EnabledLabel: "true"}}}
}

func podAsking(request string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Annotations: map[string]string{v1alpha1.NetworksAnnotation: request}}}
}

func networkNamed(p *v1alpha1.NetworkProfile, name string) v1alpha1.Network {
	for _, n := range p.Spec.Networks {
		if n.Name == name {
			return n
		}
	}
	return v1alpha1.Network{}
}
