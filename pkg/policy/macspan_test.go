package policy

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

func TestValidateMACRange(t *testing.T) {
	q := func(n int32) *int32 { return &n }
	for _, tc := range []struct {
		name  string
		r     v1alpha1.MACRange
		field string // the field named, "" = valid
		says  string
	}{
		{"valid", v1alpha1.MACRange{RangeStart: "02:00:00:00:00:00", RangeEnd: "02:00:00:00:00:ff"}, "", ""},
		{"one MAC", v1alpha1.MACRange{RangeStart: "0A:00:00:00:00:01", RangeEnd: "0a:00:00:00:00:01"}, "", ""},
		{"start above end", v1alpha1.MACRange{RangeStart: "02:00:00:00:01:00", RangeEnd: "02:00:00:00:00:ff"}, "macRange.rangeStart", "above rangeEnd"},
		{"multicast start", v1alpha1.MACRange{RangeStart: "01:00:5e:00:00:00", RangeEnd: "02:00:00:00:00:ff"}, "macRange.rangeStart", "unicast"},
		{"multicast end", v1alpha1.MACRange{RangeStart: "02:00:00:00:00:00", RangeEnd: "03:00:00:00:00:00"}, "macRange.rangeEnd", "unicast"},
		{"not a MAC", v1alpha1.MACRange{RangeStart: "02:00:00:00:00", RangeEnd: "02:00:00:00:00:ff"}, "macRange.rangeStart", "not an Ethernet MAC"},
		{"EUI-64", v1alpha1.MACRange{RangeStart: "02:00:00:00:00:00", RangeEnd: "02:00:00:00:00:00:00:01"}, "macRange.rangeEnd", "not an Ethernet MAC"},
		{"quota 0", v1alpha1.MACRange{RangeStart: "02:00:00:00:00:00", RangeEnd: "02:00:00:00:00:ff", MaxPerNamespace: q(0)}, "macRange.maxPerNamespace", "1-4096"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateMACRange(field.NewPath("macRange"), &tc.r)
			if tc.field == "" {
				if len(errs) > 0 {
					t.Fatalf("refused: %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != tc.field || !strings.Contains(errs[0].Detail, tc.says) {
				t.Fatalf("got %v, want one error on %s saying %q", errs, tc.field, tc.says)
			}
		})
	}
}

func TestMACSpan(t *testing.T) {
	s, err := ParseMACSpan("02:00:00:00:00:fe", "02:00:00:00:01:01")
	if err != nil {
		t.Fatal(err)
	}
	if s.Size() != 4 {
		t.Fatalf("size %d, want 4", s.Size())
	}
	var got []string
	for i := range s.Size() {
		got = append(got, s.At(i).String())
	}
	if want := "02:00:00:00:00:fe 02:00:00:00:00:ff 02:00:00:00:01:00 02:00:00:00:01:01"; strings.Join(got, " ") != want {
		t.Fatalf("MACs %v, want %s (carrying into the next octet)", got, want)
	}
	for mac, in := range map[string]bool{"02:00:00:00:00:fd": false, "02:00:00:00:00:FE": true, "02-00-00-00-01-01": true, "02:00:00:00:01:02": false, "junk": false} {
		if s.Contains(mac) != in {
			t.Errorf("Contains(%s) = %v, want %v", mac, !in, in)
		}
	}
	if s.String() != "02:00:00:00:00:fe-02:00:00:00:01:01" {
		t.Errorf("String %q", s.String())
	}
	if q := s.DefaultMACQuota(); q != 2 {
		t.Errorf("default quota %d, want 2 (half the range)", q)
	}
	if big, _ := ParseMACSpan("02:00:00:00:00:00", "02:ff:ff:ff:ff:ff"); big.DefaultMACQuota() != 4096 {
		t.Errorf("default quota of a large range %d, want 4096", big.DefaultMACQuota())
	}
	if v1alpha1.MACClaimName(s.At(0)) != "02-00-00-00-00-fe" || strings.Contains(v1alpha1.MACSlotName("data", "ns", 3), "-00-") {
		t.Errorf("claim names %q %q", v1alpha1.MACClaimName(s.At(0)), v1alpha1.MACSlotName("data", "ns", 3))
	}
}
