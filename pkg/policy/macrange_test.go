package policy

import (
	"strings"
	"testing"

	"podnet.io/podnet/api/v1alpha1"
)

// macProfile offers the telco network "data" with a MAC range.
func macProfile(r *v1alpha1.MACRange) []v1alpha1.NetworkProfile {
	p := telcoData()
	p.Spec.Networks[0].MACRange = r
	return []v1alpha1.NetworkProfile{p}
}

func TestDecideMACRange(t *testing.T) {
	r := &v1alpha1.MACRange{RangeStart: "02:AA:00:00:00:00", RangeEnd: "02:aa:00:00:00:ff"}
	t.Run("no static MAC: the range and its default quota are approved", func(t *testing.T) {
		a, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith("data", ""), Profiles: macProfile(r)})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		got := a.Interfaces[0]
		want := v1alpha1.ApprovedMACRange{Start: "02:aa:00:00:00:00", End: "02:aa:00:00:00:ff", MaxPerNamespace: 128}
		if got.MAC != "" || got.MACRange == nil || *got.MACRange != want {
			t.Fatalf("mac %q range %+v, want no MAC and %+v", got.MAC, got.MACRange, want)
		}
	})
	t.Run("static MAC inside the range", func(t *testing.T) {
		a, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith(`[{"name":"data","mac":"02:aa:00:00:00:07"}]`, ""), Profiles: macProfile(r)})
		if len(errs) > 0 || a.Interfaces[0].MAC != "02:aa:00:00:00:07" || a.Interfaces[0].MACRange == nil {
			t.Fatalf("got %+v, %v", a, errs)
		}
	})
	t.Run("static MAC outside the range is refused naming the field and the range", func(t *testing.T) {
		_, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith(`[{"name":"data","mac":"02:bb:00:00:00:07"}]`, ""), Profiles: macProfile(r)})
		requireErr(t, errs, "mac", "02:bb:00:00:00:07", "outside the macRange 02:aa:00:00:00:00-02:aa:00:00:00:ff", `profile "telco-data"`)
	})
	t.Run("explicit quota", func(t *testing.T) {
		q := *r
		q.MaxPerNamespace = i32(3)
		a, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith("data", ""), Profiles: macProfile(&q)})
		if len(errs) > 0 || a.Interfaces[0].MACRange.MaxPerNamespace != 3 {
			t.Fatalf("got %+v, %v", a.Interfaces[0].MACRange, errs)
		}
	})
	t.Run("a broken range is an admin error naming the field", func(t *testing.T) {
		bad := &v1alpha1.MACRange{RangeStart: "02:aa:00:00:01:00", RangeEnd: "02:aa:00:00:00:ff"}
		_, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith("data", ""), Profiles: macProfile(bad)})
		requireErr(t, errs, "macRange.rangeStart", "above rangeEnd", "an admin must fix the profile")
	})
	t.Run("the agent's re-judgement keeps an approved static MAC", func(t *testing.T) {
		a, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith(`[{"name":"data","mac":"02:aa:00:00:00:07"}]`, ""), Profiles: macProfile(r)})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if rev := Revoked(GrantInput{Namespace: telcoNamespace(), Profiles: macProfile(r), Approval: a}); len(rev) != 0 {
			t.Fatalf("revoked %+v", rev)
		}
		moved := &v1alpha1.MACRange{RangeStart: "02:cc:00:00:00:00", RangeEnd: "02:cc:00:00:00:ff"}
		rev := Revoked(GrantInput{Namespace: telcoNamespace(), Profiles: macProfile(moved), Approval: a})
		if len(rev) != 1 || !strings.Contains(rev[0].Reason, "outside the macRange") {
			t.Fatalf("after the range moved: %+v, want the interface revoked naming the range", rev)
		}
	})
}

func TestCheckMACInRange(t *testing.T) {
	r := &v1alpha1.ApprovedMACRange{Start: "02:00:00:00:00:10", End: "02:00:00:00:00:1f"}
	if err := CheckMACInRange("02:00:00:00:00:1f", r); err != nil {
		t.Errorf("last MAC of the range: %v", err)
	}
	if err := CheckMACInRange("02:00:00:00:00:20", r); err == nil || !strings.Contains(err.Error(), "02:00:00:00:00:10-02:00:00:00:00:1f") {
		t.Errorf("MAC past the end: %v", err)
	}
}

func TestValidateNetworkProfileNamesTheMACRangeField(t *testing.T) {
	p := macProfile(&v1alpha1.MACRange{RangeStart: "02:00:00:00:00:00", RangeEnd: "03:00:00:00:00:00"})[0]
	errs := ValidateNetworkProfile(&p)
	if len(errs) != 1 || errs[0].Field != "spec.networks[0].macRange.rangeEnd" || !strings.Contains(errs[0].Detail, "unicast") {
		t.Fatalf("got %v, want one error on spec.networks[0].macRange.rangeEnd saying unicast", errs)
	}
}

func TestDecideRefusesAPodOverItsMACQuota(t *testing.T) {
	p := macProfile(&v1alpha1.MACRange{RangeStart: "02:aa:00:00:00:00", RangeEnd: "02:aa:00:00:00:ff", MaxPerNamespace: i32(1)})
	_, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith("data, data", ""), Profiles: p})
	requireErr(t, errs, "the pod would hold 2 MACs", "macRange.maxPerNamespace 1")
	p = macProfile(&v1alpha1.MACRange{RangeStart: "02:aa:00:00:00:00", RangeEnd: "02:aa:00:00:00:ff"})
	_, errs = Decide(Input{Namespace: telcoNamespace(), Pod: podWith(`[{"name":"data","mac":"02:aa:00:00:00:01"},{"name":"data","mac":"02:aa:00:00:00:01"}]`, ""), Profiles: p})
	requireErr(t, errs, "mac already given to interface net1")
}
