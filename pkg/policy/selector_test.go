package policy

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestMatchSelectorAgreesWithAPIMachinery checks the fast matcher against
// metav1.LabelSelectorAsSelector on every pair of selector and label set.
func TestMatchSelectorAgreesWithAPIMachinery(t *testing.T) {
	req := func(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	selectors := []metav1.LabelSelector{
		{},
		{MatchLabels: map[string]string{"tenant": "telco"}},
		{MatchLabels: map[string]string{"tenant": "telco", "tier": "gold"}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{req("tenant", metav1.LabelSelectorOpIn, "telco", "media")}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{req("tenant", metav1.LabelSelectorOpNotIn, "telco")}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{req("tier", metav1.LabelSelectorOpExists)}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{req("tier", metav1.LabelSelectorOpDoesNotExist)}},
		{MatchLabels: map[string]string{"tenant": "telco"}, MatchExpressions: []metav1.LabelSelectorRequirement{req("tier", metav1.LabelSelectorOpNotIn, "bronze"), req("zone", metav1.LabelSelectorOpExists)}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{req("tenant", "Bogus")}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{req("tenant", metav1.LabelSelectorOpIn)}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{req("tenant", metav1.LabelSelectorOpExists, "x")}},
	}
	sets := []map[string]string{
		nil,
		{"tenant": "telco"},
		{"tenant": "media", "tier": "gold"},
		{"tenant": "telco", "tier": "gold", "zone": "a"},
		{"tenant": "telco", "tier": "bronze", "zone": "a"},
		{"tier": ""},
	}
	for i, sel := range selectors {
		ref, refErr := metav1.LabelSelectorAsSelector(&sel)
		for j, set := range sets {
			got, err := matchSelector(&sel, set)
			if (err != nil) != (refErr != nil) {
				t.Fatalf("selector %d: error %v, apimachinery %v", i, err, refErr)
			}
			if refErr != nil {
				continue
			}
			if want := ref.Matches(labels.Set(set)); got != want {
				t.Errorf("selector %d on labels %d (%v): got %v, want %v", i, j, set, got, want)
			}
		}
	}
}
