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
