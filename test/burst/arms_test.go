package burst

import (
	"slices"
	"strings"
	"testing"
)

// TestBurstArmsFilters: a filter keeps the named arms in their order,
// always with the arm without networks that every ratio needs, and names
// the arms it knows when given one it does not.
func TestBurstArmsFilters(t *testing.T) {
	all, err := burstArms("", waitContainer)
	if err != nil || len(all) != 8 {
		t.Fatalf("all arms: %d, %v", len(all), err)
	}
	got, err := burstArms("multus_1_network, 1_network", sandboxSetup)
	if err != nil {
		t.Fatal(err)
	}
	if names := armNames(got); names != "without_networks, 1_network, multus_1_network" {
		t.Fatalf("arms %s", names)
	}
	if got[1].kind != sandboxSetup || got[2].kind != multusCNI || got[1].vsMultus != got[2].name {
		t.Errorf("arms %+v", got)
	}
	// A paced arm brings the paced arm without networks it is set against.
	got, err = burstArms("1_network_paced", nriSetup)
	if err != nil {
		t.Fatal(err)
	}
	if names := armNames(got); names != "without_networks, without_networks_paced, 1_network_paced" {
		t.Fatalf("arms %s", names)
	}
	if got[2].baseName() != got[1].name || got[1].pace == 0 || got[2].pace != got[1].pace || got[1].setAgainst() {
		t.Errorf("paced arms %+v", got)
	}
	if _, err := burstArms("3_networks", waitContainer); err == nil || !strings.Contains(err.Error(), `arm "3_networks" unknown`) || !strings.Contains(err.Error(), "multus_2_networks") {
		t.Errorf("unknown arm: error %v", err)
	}
}

func TestBurstSizes(t *testing.T) {
	if got, err := burstSizes(""); err != nil || !slices.Equal(got, []int{30, 100}) {
		t.Errorf("default sizes %v, %v; want 30 and 100", got, err)
	}
	if got, err := burstSizes("5, 10"); err != nil || !slices.Equal(got, []int{5, 10}) {
		t.Errorf("sizes %v, %v", got, err)
	}
	for _, bad := range []string{"0", "101", "x"} {
		if _, err := burstSizes(bad); err == nil || !strings.Contains(err.Error(), "PODNET_BURST_N") {
			t.Errorf("size %q: error %v", bad, err)
		}
	}
}
