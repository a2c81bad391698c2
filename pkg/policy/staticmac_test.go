package policy

import (
	"net"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// TestMACClaimRange: every MAC that is not the kernel's is claimed, a
// static one without a range on its own.
func TestMACClaimRange(t *testing.T) {
	rng := &v1alpha1.ApprovedMACRange{Start: "02:00:00:00:00:00", End: "02:00:00:00:00:0f", MaxPerNamespace: 8}
	cases := []struct {
		name string
		ai   v1alpha1.ApprovedInterface
		want *v1alpha1.ApprovedMACRange
	}{
		{"the kernel's MAC", v1alpha1.ApprovedInterface{}, nil},
		{"a range", v1alpha1.ApprovedInterface{MACRange: rng}, rng},
		{"a static MAC in a range", v1alpha1.ApprovedInterface{MAC: "02:00:00:00:00:07", MACRange: rng}, rng},
		{"a static MAC without a range", v1alpha1.ApprovedInterface{MAC: "0a:00:00:00:00:01"},
			&v1alpha1.ApprovedMACRange{Start: "0a:00:00:00:00:01", End: "0a:00:00:00:00:01"}},
	}
	for _, c := range cases {
		got := MACClaimRange(c.ai)
		if (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestGatewayMAC(t *testing.T) {
	cases := map[string]string{
		"00:00:5e:00:01:00": "IPv4 VRRP",
		"00:00:5e:00:01:ff": "IPv4 VRRP",
		"00:00:5e:00:02:01": "IPv6 VRRP",
		"00:00:0c:07:ac:0a": "HSRP (",
		"00:00:0c:9f:f0:00": "HSRP version 2",
		"00:00:0c:9f:ff:ff": "HSRP version 2",
		"00:00:5e:00:03:01": "",
		"00:00:5e:00:00:01": "",
		"00:00:0c:9f:ef:ff": "",
		"00:00:0c:07:ad:01": "",
		"02:00:5e:00:01:01": "",
	}
	for in, want := range cases {
		mac, err := net.ParseMAC(in)
		if err != nil {
			t.Fatal(err)
		}
		got := gatewayMAC(mac)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("gatewayMAC(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckNodeMAC(t *testing.T) {
	p := field.NewPath("interfaces").Index(0).Child("mac")
	seen := []NodeMAC{
		{MAC: "0a:00:00:00:00:01", Of: `bridge "pnbr-data"`},
		{MAC: "0a:00:00:00:00:02", Of: `vxlan "pnvx0123"`},
		{MAC: "not-a-mac", Of: "noise"},
	}
	cases := []struct {
		mac  string
		want []string // empty: accepted
	}{
		{"0a:00:00:00:00:01", []string{"interfaces[0].mac", `is the MAC of bridge "pnbr-data" on this node`, "must not be a bridge's, an uplink's, a gateway's or another pod's"}},
		{"0A-00-00-00-00-02", []string{"0A-00-00-00-00-02", `vxlan "pnvx0123"`}},
		{"0a:00:00:00:00:03", nil},
		{"zz", []string{"interfaces[0].mac", "not an Ethernet MAC"}},
	}
	for _, c := range cases {
		err := CheckNodeMAC(p, c.mac, seen)
		if len(c.want) == 0 {
			if err != nil {
				t.Errorf("%s refused: %v", c.mac, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s accepted", c.mac)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.mac, err, w)
			}
		}
	}
}
