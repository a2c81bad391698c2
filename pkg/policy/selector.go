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
	c := compileSelector(sel)
	if c.err != nil {
		return false, c.err
	}
	return c.matches(set), nil
}

// selector is a label selector made ready to match many label sets: its
// matchLabels as a list (a ProfileSet matches a hundred selectors per
// decision, and ranging over a map costs more than the comparisons), and
// its error, which depends on the selector alone.
type selector struct {
	labels      [][2]string
	expressions []metav1.LabelSelectorRequirement
	err         error
}

func compileSelector(sel *metav1.LabelSelector) selector {
	for _, r := range sel.MatchExpressions {
		switch r.Operator {
		case metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn:
			if len(r.Values) == 0 {
				return selector{err: fmt.Errorf("key %q: operator %s needs values", r.Key, r.Operator)}
			}
		case metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist:
			if len(r.Values) > 0 {
				return selector{err: fmt.Errorf("key %q: operator %s takes no values", r.Key, r.Operator)}
			}
		default:
			return selector{err: fmt.Errorf("key %q: %q is not a valid label selector operator", r.Key, r.Operator)}
		}
	}
	c := selector{labels: make([][2]string, 0, len(sel.MatchLabels)), expressions: sel.MatchExpressions}
	for k, v := range sel.MatchLabels {
		c.labels = append(c.labels, [2]string{k, v})
	}
	return c
}

// matches reports whether a valid selector selects set.
func (c selector) matches(set map[string]string) bool {
	for _, kv := range c.labels {
		if got, ok := set[kv[0]]; !ok || got != kv[1] {
			return false
		}
	}
	for _, r := range c.expressions {
		got, has := set[r.Key]
		var ok bool
		switch r.Operator {
		case metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn:
			ok = (has && contains(r.Values, got)) == (r.Operator == metav1.LabelSelectorOpIn)
		default: // Exists, DoesNotExist: compileSelector refused the rest.
			ok = has == (r.Operator == metav1.LabelSelectorOpExists)
		}
		if !ok {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
