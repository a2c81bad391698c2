package hostdev

import (
	"strings"
	"testing"
)

func TestMatches(t *testing.T) {
	nic := NIC{Name: "ens3f1", Driver: "ixgbe", PCI: "0000:3b:00.1"}
	for _, tc := range []struct {
		sel  Selector
		want bool
	}{
		{Selector{Names: []string{"ens3f*"}}, true},
		{Selector{Names: []string{"eth*", "ens3f1"}}, true},
		{Selector{Names: []string{"ens3f"}}, false},
		{Selector{Drivers: []string{"ixgbe"}}, true},
		{Selector{Drivers: []string{"i40e"}}, false},
		{Selector{PCIAddresses: []string{"0000:3b:00.1"}}, true},
		{Selector{Names: []string{"ens3f*"}, Drivers: []string{"i40e"}}, false},
		{Selector{Names: []string{"ens3f*"}, Drivers: []string{"ixgbe"}, PCIAddresses: []string{"0000:3b:00.0"}}, false},
		{Selector{}, true},
		{Selector{Names: []string{"ens3f*"}, VFs: true}, false},
	} {
		if got := tc.sel.Matches(nic); got != tc.want {
			t.Errorf("%s matches %+v = %t, want %t", tc.sel, nic, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	if errs := (Selector{}).Validate("hostDevice"); len(errs) != 1 || !strings.Contains(errs[0].Error(), "hostDevice: select by at least one") {
		t.Fatalf("empty selector: %v", errs)
	}
	if errs := (Selector{Names: []string{"ens[", "ok*"}}).Validate("hostDevice"); len(errs) != 1 || !strings.Contains(errs[0].Error(), `hostDevice.names: "ens[" is not a shell pattern`) {
		t.Fatalf("bad pattern: %v", errs)
	}
	if errs := (Selector{Drivers: []string{"ixgbe"}}).Validate("hostDevice"); len(errs) != 0 {
		t.Fatalf("drivers only: %v", errs)
	}
}

// TestMatchesVFs: a VF selector matches a VF by its PF, never the PF
// itself nor another PF's VF; a plain selector matches a VF by its own
// name.
func TestMatchesVFs(t *testing.T) {
	pf := NIC{Name: "ens3f0", Driver: "ice", PCI: "0000:3b:00.0"}
	vf := NIC{Name: "ens3f0v2", Driver: "iavf", PCI: "0000:3b:01.2", PF: &pf, VF: 2}
	other := NIC{Name: "ens4f0v0", Driver: "iavf", PCI: "0000:5e:01.0", PF: &NIC{Name: "ens4f0", Driver: "ice"}}
	vfs := Selector{Names: []string{"ens3f0"}, VFs: true}
	for _, tc := range []struct {
		sel  Selector
		nic  NIC
		want bool
	}{
		{vfs, vf, true},
		{vfs, pf, false},
		{vfs, other, false},
		{Selector{Drivers: []string{"ice"}, VFs: true}, other, true},
		{Selector{Names: []string{"ens3f0v*"}}, vf, true},
		{Selector{Names: []string{"ens3f0"}}, vf, false},
	} {
		if got := tc.sel.Matches(tc.nic); got != tc.want {
			t.Errorf("%s matches %s = %t, want %t", tc.sel, tc.nic.Name, got, tc.want)
		}
	}
	if got := vfs.String(); got != "VFs of names ens3f0" {
		t.Errorf("String() = %q", got)
	}
}
