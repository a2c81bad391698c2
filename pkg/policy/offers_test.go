package policy

import (
	"fmt"
	"strings"
	"testing"

	"podnet.io/podnet/api/v1alpha1"
)

// TestOfferListMatchesDecide: the table lists exactly what the namespace
// and service account may ask for, with the same limits as the sentence
// in denials, and a conflict as unusable.
func TestOfferListMatchesDecide(t *testing.T) {
	conflicting := telcoData()
	conflicting.Name = "telco-data-2"
	conflicting.Spec.Networks = conflicting.Spec.Networks[1:2]
	conflicting.Spec.Networks[0].Bridge = &v1alpha1.BridgeNetwork{Name: "pnbr-other"}
	profiles := append(baseProfiles(), conflicting)
	cases := []struct {
		sa, want string
	}{
		{"default", "data[telco-data/2] fabric[telco-uplink/4] l2[telco-data/2,telco-data-2/2 unusable] tagged[telco-uplink/4] uplink[telco-uplink/4]"},
	}
	for _, c := range cases {
		in := Input{Namespace: telcoNamespace(), Pod: podWith("", c.sa), Profiles: profiles}
		o := OfferList(in)
		var got []string
		for _, n := range o.Networks {
			var ps []string
			for _, p := range n.Profiles {
				ps = append(ps, fmt.Sprintf("%s/%d", p.Name, p.MaxInterfaces))
			}
			s := n.Name + "[" + strings.Join(ps, ",")
			if n.Unusable != "" {
				s += " unusable"
			}
			got = append(got, s+"]")
			if n.Unusable == "" && !strings.Contains(o.Summary, n.Name+" (") {
				t.Errorf("sa %s: %s missing from the summary %q", c.sa, n.Name, o.Summary)
			}
			if n.Unusable == "" && !strings.Contains(o.Summary, n.Limits) {
				t.Errorf("sa %s: limits %q of %s differ from the summary %q", c.sa, n.Limits, n.Name, o.Summary)
			}
		}
		if strings.Join(got, " ") != c.want || !o.Enabled || o.ServiceAccount != c.sa || o.Summary != Offer(in) {
			t.Errorf("sa %s: offers %s (enabled %v, summary %q)\nwant %s", c.sa, strings.Join(got, " "), o.Enabled, o.Summary, c.want)
		}
	}
	o := OfferList(Input{Namespace: telcoNamespace(), Pod: podWith("", ""), Profiles: profiles})
	if len(o.Primary) != 2 || o.Primary[0] != (OfferedPrimary{Profile: "telco-data", MTU: "1280-8900"}) {
		t.Errorf("primary interface offers %+v", o.Primary)
	}
	ns := telcoNamespace()
	delete(ns.Labels, v1alpha1.EnabledLabel)
	o = OfferList(Input{Namespace: ns, Pod: podWith("", ""), Profiles: profiles})
	if o.Enabled || len(o.Networks) != 0 || !strings.Contains(o.Summary, "not opted in") {
		t.Errorf("namespace not opted in: %+v", o)
	}
}
