package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
	"podnet.io/podnet/test/testenv"
)

// TestCRDSpanningBridge installs the generated CRDs in a real
// kube-apiserver: the spanning sample is accepted with its defaults, and
// each rule of bridge.vxlan and bridge.uplink refuses a bad profile with a
// message that says what to fix.
func TestCRDSpanningBridge(t *testing.T) {
	env := testenv.Shared(t)
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(env.Root, "deploy", "samples", "networkprofile-spanning.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sample := &v1alpha1.NetworkProfile{}
	if err := yaml.UnmarshalStrict(data, sample); err != nil {
		t.Fatalf("sample: %v", err)
	}
	if err := env.Client.Create(ctx, sample.DeepCopy()); err != nil {
		t.Fatalf("sample refused: %v", err)
	}
	stored := &v1alpha1.NetworkProfile{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: sample.Name}, stored); err != nil {
		t.Fatal(err)
	}
	if vx := stored.Spec.Networks[0].Bridge.VXLAN; vx.Port != policy.DefaultVXLANPort || vx.UnderlayMTU != policy.DefaultUnderlayMTU {
		t.Errorf("vxlan defaults: port %d underlayMTU %d, want %d and %d", vx.Port, vx.UnderlayMTU, policy.DefaultVXLANPort, policy.DefaultUnderlayMTU)
	}
	if errs := policy.ValidateNetworkProfile(stored); len(errs) > 0 {
		t.Errorf("the policy refuses the stored sample: %v", errs)
	}

	tests := []struct {
		name   string
		mutate func(n []v1alpha1.Network)
		want   string
	}{
		{"vxlan and uplink", func(n []v1alpha1.Network) {
			n[0].Bridge.Uplink = &v1alpha1.UplinkSpan{Interface: "eth1"}
		}, "set at most one of bridge.vxlan and bridge.uplink"},
		{"vni zero", func(n []v1alpha1.Network) { n[0].Bridge.VXLAN.VNI = 0 }, "vni"},
		{"vni above 24 bits", func(n []v1alpha1.Network) { n[0].Bridge.VXLAN.VNI = 1 << 24 }, "should be less than or equal to 16777215"},
		{"port above 65535", func(n []v1alpha1.Network) { n[0].Bridge.VXLAN.Port = 70000 }, "should be less than or equal to 65535"},
		{"underlay mtu below 1280", func(n []v1alpha1.Network) { n[0].Bridge.VXLAN.UnderlayMTU = 1000 }, "should be greater than or equal to 1280"},
		{"local both", func(n []v1alpha1.Network) {
			n[0].Bridge.VXLAN.Local = &v1alpha1.VXLANLocal{Interface: "eth0", Address: "10.0.0.1"}
		}, "set exactly one of local.interface and local.address"},
		{"local address not an IP", func(n []v1alpha1.Network) {
			n[0].Bridge.VXLAN.Local = &v1alpha1.VXLANLocal{Address: "node-1"}
		}, "local.address must be an IP address"},
		{"underlay loopback", func(n []v1alpha1.Network) {
			n[0].Bridge.VXLAN.Underlay = &v1alpha1.VXLANUnderlay{CIDRs: []string{"10.0.0.0/16", "127.0.0.0/8"}}
		}, "underlay.cidrs must be CIDRs of unicast addresses"},
		{"underlay everything", func(n []v1alpha1.Network) {
			n[0].Bridge.VXLAN.Underlay = &v1alpha1.VXLANUnderlay{CIDRs: []string{"::/0"}}
		}, "underlay.cidrs must be CIDRs of unicast addresses"},
		{"underlay link-local", func(n []v1alpha1.Network) {
			n[0].Bridge.VXLAN.Underlay = &v1alpha1.VXLANUnderlay{CIDRs: []string{"169.254.0.0/16"}}
		}, "underlay.cidrs must be CIDRs of unicast addresses"},
		{"underlay not a CIDR", func(n []v1alpha1.Network) {
			n[0].Bridge.VXLAN.Underlay = &v1alpha1.VXLANUnderlay{CIDRs: []string{"10.0.0.1"}}
		}, "underlay.cidrs must be CIDRs of unicast addresses"},
		{"underlay empty", func(n []v1alpha1.Network) { n[0].Bridge.VXLAN.Underlay = &v1alpha1.VXLANUnderlay{} }, "cidrs"},
		{"uplink name", func(n []v1alpha1.Network) { n[1].Bridge.Uplink.Interface = "eth/1" }, "interface"},
		{"vlan with uplink", func(n []v1alpha1.Network) {
			v := int32(100)
			n[1].Bridge.VLAN = &v1alpha1.VLANPolicy{Default: &v}
		}, "bridge.vlan cannot be combined with bridge.vxlan or bridge.uplink"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bad := sample.DeepCopy()
			bad.Name = "bad-" + strings.ReplaceAll(tc.name, " ", "-")
			tc.mutate(bad.Spec.Networks)
			err := env.Client.Create(ctx, bad)
			if err == nil {
				t.Fatal("accepted, want refused")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("refused with %q, want it to say %q", err, tc.want)
			}
			if errs := policy.ValidateNetworkProfile(bad); len(errs) == 0 {
				t.Errorf("the policy accepts what the CRD refuses")
			}
		})
	}
}
