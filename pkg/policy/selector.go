package policy

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// matchSelector reports whether a label selector selects a set of labels.
// It gives metav1.LabelSelectorAsSelector's answers without building a
// labels.Selector, which validates every key and value with regular
// expressions: with a hundred profiles that was half the cost of an
// admission decision. A selector that selector would refuse (an unknown
// operator, In/NotIn without values, Exists/DoesNotExist with values) is an
// error here too.
func matchSelector(sel *metav1.LabelSelector, set map[string]string) (bool, error) {
	matched := true
	for k, v := range sel.MatchLabels {
		if got, ok := set[k]; !ok || got != v {
			matched = false
		}
	}
	for _, r := range sel.MatchExpressions {
		got, has := set[r.Key]
		var ok bool
		switch r.Operator {
		case metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn:
			if len(r.Values) == 0 {
				return false, fmt.Errorf("key %q: operator %s needs values", r.Key, r.Operator)
			}
			in := has && contains(r.Values, got)
			ok = in == (r.Operator == metav1.LabelSelectorOpIn)
		case metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist:
			if len(r.Values) > 0 {
				return false, fmt.Errorf("key %q: operator %s takes no values", r.Key, r.Operator)
			}
			ok = has == (r.Operator == metav1.LabelSelectorOpExists)
		default:
			return false, fmt.Errorf("key %q: %q is not a valid label selector operator", r.Key, r.Operator)
		}
		if !ok {
			matched = false
		}
	}
	return matched, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
